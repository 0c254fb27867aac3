"""Selenium helpers for the console's browser tests: a headless Debian
Chromium that reaches nothing but loopback, its console errors, an axe-core
run, and screenshots under target/console-screens/.

    from harness import browser, console_errors, axe, screenshot
    with browser() as driver:
        driver.get(url)
        assert not console_errors(driver)
        assert not axe(driver)
        screenshot(driver, "sessions")

tests/console/setup.sh installs what this needs (chromium, chromium-driver,
selenium, axe-core)."""

import os

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.wait import WebDriverWait

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
AXE = os.path.join(HERE, "node_modules", "axe-core", "axe.min.js")
SCREENS = os.path.join(ROOT, "target", "console-screens")
# No host name but localhost resolves, and everything but loopback goes to
# a proxy on the discard port, where nothing listens: a page reaches only
# the servers on this machine's loopback.
OFFLINE = [
    "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1 , EXCLUDE localhost",
    "--proxy-server=127.0.0.1:9",
    "--proxy-bypass-list=127.0.0.1;localhost",
]
QUIET = [
    "--no-first-run", "--no-default-browser-check", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--disable-default-apps",
    "--disable-extensions", "--metrics-recording-only", "--disable-domain-reliability",
]


def options():
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,900",
                *OFFLINE, *QUIET]:
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return opts


def browser():
    """A headless Chromium driven through Debian's chromedriver (no download:
    the driver's path is given, so Selenium Manager is not consulted). A
    `with` block quits it on leaving; otherwise call `driver.quit()`."""
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options())
    driver.set_page_load_timeout(30)
    driver.set_script_timeout(60)
    return driver


def console_logs(driver):
    """The browser console's entries since the last call (reading empties it)."""
    return driver.get_log("browser")


def console_errors(driver):
    """The SEVERE console entries since the last read: script errors, CSP
    violations, failed loads."""
    return [e for e in console_logs(driver) if e["level"] == "SEVERE"]


def axe(driver, impacts=("serious", "critical")):
    """axe-core's violations of the given impacts on the current page.
    Injected through WebDriver (execute_script runs outside the page's
    Content-Security-Policy, so a page without inline scripts can be checked)."""
    with open(AXE) as f:
        driver.execute_script(f.read())
    result = driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "axe.run(document, {resultTypes: ['violations']})"
        ".then(r => done({violations: r.violations}), e => done({error: String(e)}));")
    if "error" in result:
        raise RuntimeError(f"axe-core failed: {result['error']}")
    return [v for v in result["violations"] if v.get("impact") in impacts]


def describe(violations):
    """One line per violation and node, for an assertion message."""
    return "\n".join(f"{v['impact']}: {v['id']} ({v['help']}) at {n['target']}"
                     for v in violations for n in v["nodes"])


def wait_css(driver, selector, timeout=10):
    """The first element matching the CSS `selector` once it is visible."""
    return WebDriverWait(driver, timeout).until(
        expected_conditions.visibility_of_element_located((By.CSS_SELECTOR, selector)))


def screenshot(driver, name):
    """Saves the viewport as target/console-screens/<name>.png; answers its path."""
    os.makedirs(SCREENS, exist_ok=True)
    path = os.path.join(SCREENS, f"{name}.png")
    driver.save_screenshot(path)
    return path
