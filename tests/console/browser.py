#!/usr/bin/env python3
"""The console in a real browser: headless Debian Chromium, driven by
Selenium, through every view of a server holding recorded proxy sessions
(seed.py). Fails on a page that does not show what it should, a console
error, a serious or critical axe-core violation, a script that ran from
stored content, or anything of one namespace shown to another.

    python3 tests/console/browser.py [target/debug/cairn]
    python3 tests/console/browser.py --seeded seeded.json   # against a running seed.py

Screenshots of each view go to target/console-screens/ (CI artifacts);
tests/console/setup.sh installs Chromium, chromedriver, selenium, axe-core.
"""

import json
import re
import os
import shutil
import sys
import tempfile
import time
import urllib.error
import urllib.parse

from selenium.common.exceptions import NoAlertPresentException
from selenium.webdriver.common.by import By

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import seed as seed_mod  # noqa: E402
from harness import axe, browser, console_errors, describe, screenshot, wait_css  # noqa: E402

CHECKS = []


def check(condition, what):
    CHECKS.append(what)
    if not condition:
        raise AssertionError(what)


def view(driver, name, selector, *, errors_expected=False, shot=True):
    """The page is loaded with `selector` visible; no console error, no
    serious or critical axe violation; a screenshot named `name`."""
    element = wait_css(driver, selector)
    errors = console_errors(driver)
    if not errors_expected:
        check(not errors, f"{name}: no console errors ({errors})")
    violations = axe(driver)
    check(not violations, f"{name}: no serious or critical axe violation\n{describe(violations)}")
    check(pwned(driver) is None, f"{name}: no stored script ran")
    if shot:
        screenshot(driver, name)
    return element


def pwned(driver):
    try:
        alert = driver.switch_to.alert
        text = alert.text
        alert.dismiss()
        return f"alert: {text}"
    except NoAlertPresentException:
        pass
    return driver.execute_script("return window.__pwned === undefined ? null : String(window.__pwned);")


def rows(driver, selector):
    return driver.find_elements(By.CSS_SELECTOR, selector)


def sign_in(driver, base, key):
    driver.delete_all_cookies()
    driver.get(base + "/ui/")
    check(driver.current_url.endswith("/ui/login"), "an unsigned browser is sent to the sign-in page")
    field = wait_css(driver, "#key")
    field.send_keys(key)
    driver.find_element(By.CSS_SELECTOR, "form.login button[type=submit]").click()
    wait_css(driver, "header.top")


def main():
    started = time.perf_counter()
    if sys.argv[1:2] == ["--seeded"]:
        with open(sys.argv[2]) as f:
            seeded = json.load(f)
        with browser() as driver:
            run(driver, seeded)
        print(f"console browser test: {len(CHECKS)} checks passed")
        return
    binary = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "target", "debug", "cairn")
    data_dir = tempfile.mkdtemp(prefix="console-browser.")
    seeded = seed_mod.seed(binary, data_dir)
    print(f"seeded in {time.perf_counter() - started:.0f} s "
          f"(big memory {seeded['big_bytes']} bytes in {seeded['big_put_seconds']} s)", flush=True)
    try:
        with browser() as driver:
            run(driver, seeded)
    finally:
        seed_mod.stop(seeded)
        shutil.rmtree(data_dir, ignore_errors=True)
    print(f"console browser test: {len(CHECKS)} checks passed in {time.perf_counter() - started:.0f} s; "
          f"screenshots in target/console-screens/")


def run(driver, s):
    base, keys = s["base"], s["keys"]

    # Sign-in, then the session list.
    driver.delete_all_cookies()
    driver.get(base + "/ui/")
    view(driver, "login", "#key")
    sign_in(driver, base, keys["alpha"])
    table = view(driver, "sessions", "#sessions")
    threads = [a.text for a in table.find_elements(By.CSS_SELECTOR, "tbody th a")]
    check(sorted(threads) == sorted(s["threads"]), f"the session list shows alpha's threads {threads}")

    # A session's timeline: one row per exchange, oldest first.
    long = s["long_thread"]
    table.find_element(By.LINK_TEXT, long).click()
    timeline = view(driver, "session", "#timeline")
    count = len(timeline.find_elements(By.CSS_SELECTOR, "tbody tr"))
    check(count == s["exchanges_per_thread"][long], f"the timeline has {count} rows, one per exchange")

    # An exchange with a piece: its marker links to the original lines.
    driver.get(f"{base}/ui/exchanges/{s['piece_exchange']}")
    view(driver, "exchange", "ol.transcript")
    check(rows(driver, "#pieces tbody tr"), "the exchange lists the pieces it took out")
    sent = driver.find_element(By.CSS_SELECTOR, "#pieces details.sent")
    sent.find_element(By.TAG_NAME, "summary").click()
    piece_first = json.loads(seed_mod.http("GET", f"{base}/v1/memories/{s['piece_memory']}/lines?start=1&end=1",
                                           headers=seed_mod.bearer(keys["alpha"]))[1])["text"].rstrip("\n")
    shown = sent.find_element(By.TAG_NAME, "pre").text
    check(shown.strip().startswith(piece_first.strip()), f"beside the piece, what the client sent ({shown[:80]!r})")
    marker = driver.find_element(By.CSS_SELECTOR, ".block.marker a.pointer")
    memory_id = urllib.parse.urlsplit(marker.get_attribute("href")).path.rsplit("/", 1)[-1]
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", marker)
    screenshot(driver, "exchange-marker")
    marker.click()
    lines = view(driver, "memory-from-marker", "#lines")
    original = json.loads(seed_mod.http("GET", f"{base}/v1/memories/{memory_id}/lines?start=1&end=3",
                                        headers=seed_mod.bearer(keys["alpha"]))[1])["text"]
    first = lines.find_element(By.CSS_SELECTOR, "tr#L1 code").text
    check(first == original.split("\n")[0].rstrip("\r"), f"the marker opens the original's lines ({first!r})")

    if s.get("retrieval_exchange"):
        driver.get(f"{base}/ui/exchanges/{s['retrieval_exchange']}")
        view(driver, "exchange-retrieval", "#rounds")
        check(any("memory_" in td.text for td in rows(driver, "#rounds tbody td")),
              "the rounds show the model's retrieval")

    # Grep inside the memory, with context.
    driver.get(f"{base}/ui/memories/{memory_id}")
    word = re.findall(r"[A-Za-z]{4,}", original)[0]
    field = driver.find_element(By.CSS_SELECTOR, "#grep")
    field.clear()
    field.send_keys(word)
    field.submit()
    matches = view(driver, "grep", "#matches")
    check(matches.find_elements(By.CSS_SELECTOR, "li .match"), f"grep for {word!r} shows matching lines")

    # Full-text search over the namespace.
    driver.get(base + "/ui/memories")
    view(driver, "memories", "#memories")
    field = driver.find_element(By.CSS_SELECTOR, "#q")
    field.send_keys("inventory")
    field.submit()
    results = view(driver, "search", "#results")
    titles = [a.text for a in results.find_elements(By.CSS_SELECTOR, ".result-title a")]
    check("inventory as JSON" in titles, f"search finds the JSON memory ({titles})")

    # jq on the JSON memory.
    driver.get(f"{base}/ui/memories/{s['json_memory']}")
    field = wait_css(driver, "#jq")
    field.send_keys(".inventory.warehouse")
    field.submit()
    out = view(driver, "jq", "pre.jq")
    check(out.text == '"north"', f"jq answers ({out.text!r})")

    # Paging the big memory: a page deep inside, then the next one.
    big, middle = s["big_memory"], s["big_lines"] // 2
    began = time.perf_counter()
    driver.get(f"{base}/ui/memories/{big}?from={middle}")
    deep = view(driver, "big-memory", "#lines")
    seconds = time.perf_counter() - began
    row = deep.find_element(By.CSS_SELECTOR, f"tr#L{middle} code").text
    check(row.startswith(f"line {middle:08d} "), f"line {middle} of the big memory is {row!r}")
    driver.find_element(By.CSS_SELECTOR, "nav.pager a[rel=next]").click()
    nxt = wait_css(driver, f"tr#L{middle + 200}")
    check(f"line {middle + 200:08d} " in nxt.text, f"the next page starts at line {middle + 200}")
    print(f"big memory ({s['big_bytes']} bytes): page at line {middle} in {seconds:.2f} s", flush=True)
    field = driver.find_element(By.CSS_SELECTOR, "#grep")
    field.send_keys("ERROR needle")
    field.submit()
    needles = view(driver, "big-grep", "#matches")
    first_hit = needles.find_element(By.CSS_SELECTOR, "li .match").text
    check(re.match(rf"{seed_mod.NEEDLE_EVERY}\s*line {seed_mod.NEEDLE_EVERY:08d} ERROR needle", first_hit),
          f"grep finds the first needle of the big memory ({first_hit!r})")
    # The scan stops at its byte cap; the page offers to go on from there.
    seen = {first_hit}
    for _ in range(10):
        if len(seen) >= 3:
            break
        driver.find_element(By.CSS_SELECTOR, "#grep-more").click()
        wait_css(driver, "#grep-summary")
        seen.update(e.text for e in rows(driver, "li .match"))
    numbers = sorted(int(re.match(r"\d+", t).group()) for t in seen)
    check(numbers[:3] == [seed_mod.NEEDLE_EVERY * k for k in (1, 2, 3)],
          f"grepping on finds the next needles in order ({numbers})")
    screenshot(driver, "big-grep-on")

    # Savings over time.
    driver.get(base + "/ui/savings")
    view(driver, "savings", "figure.chart svg")
    check(rows(driver, "svg rect.billed"), "the savings chart draws billed bars")
    check(rows(driver, "#models tbody tr"), "savings by model")

    # Stored markup shows as text: no script of it runs.
    for path in (f"/ui/memories/{s['xss_memory']}", f"/ui/memories/{s['xss_memory']}?grep=pwned",
                 "/ui/memories?tag=xss", "/ui/memories?q=payloads"):
        driver.get(base + path)
        view(driver, "xss" if path.endswith(s["xss_memory"]) else None, "main", shot=path.endswith(s["xss_memory"]))
        check("<script>window.__pwned" in driver.find_element(By.CSS_SELECTOR, "main").text,
              f"{path}: the payload shows as text")

    # Deleting asks first, carries the form's token, and deletes.
    doomed = seed_mod.put(base, keys["alpha"], {"content": "delete me from the console\n", "title": "doomed"})
    driver.get(f"{base}/ui/memories/{doomed['id']}")
    wait_css(driver, "button.danger").click()
    driver.switch_to.alert.accept()
    wait_css(driver, "#memories")
    try:
        seed_mod.http("GET", f"{base}/v1/memories/{doomed['id']}", headers=seed_mod.bearer(keys["alpha"]))
        check(False, "the deleted memory is gone")
    except urllib.error.HTTPError as e:
        check(e.code == 404, "the deleted memory is gone")

    # Another namespace's key sees nothing of alpha, and no key sees nothing at all.
    sign_in(driver, base, keys["beta"])
    listed = [a.text for a in rows(driver, "#sessions tbody th a")]
    check(listed == [s["beta_thread"]], f"beta sees only its own session ({listed})")
    for path in (f"/ui/memories/{s['xss_memory']}", f"/ui/exchanges/{s['piece_exchange']}",
                 "/ui/session?" + urllib.parse.urlencode({"thread": long}), "/ui/memories?ns=alpha"):
        driver.get(base + path)
        view(driver, None, "main", errors_expected=True, shot=False)
        text = driver.find_element(By.CSS_SELECTOR, "main").text
        check("pwned" not in text and "inventory" not in text and s["piece_exchange"] not in text,
              f"beta sees nothing of alpha at {path}")
    driver.get(base + "/ui/memories")
    check("inventory as JSON" not in driver.page_source, "alpha's memories are not in beta's list")
    driver.delete_all_cookies()
    driver.get(f"{base}/ui/memories/{s['json_memory']}")
    check(driver.current_url.endswith("/ui/login") and "inventory" not in driver.page_source,
          "without a key the page is the sign-in form")

    # The admin key may look at alpha.
    sign_in(driver, base, keys["admin"])
    driver.get(base + "/ui/?ns=alpha")
    admin_threads = [a.text for a in view(driver, "admin-sessions", "#sessions", shot=False)
                     .find_elements(By.CSS_SELECTOR, "tbody th a")]
    check(sorted(admin_threads) == sorted(s["threads"]), "an admin key sees alpha's sessions with ?ns=alpha")

    # Signing out ends the session: the next page is the sign-in form again.
    wait_css(driver, "header.top form[action='/ui/logout'] button").click()
    wait_css(driver, "#key")
    driver.get(base + "/ui/")
    check(driver.current_url.endswith("/ui/login"), "after signing out, the console asks for a key again")


if __name__ == "__main__":
    main()
