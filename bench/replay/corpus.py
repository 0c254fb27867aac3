"""The replay corpus: agent sessions built from real tool outputs.

Each session is a script of turns. A turn is a user message, then the steps
the model takes: shell calls (each with the real output of a real command
run on this machine) and a final answer that quotes lines of those outputs
(the "needed lines": what the model must be able to read to answer). Some
turns ask again about an output of an earlier turn, so a line can be needed
long after it was produced.

Outputs come from commands whose output is stable on a given machine and
commit: `git` on a fixed commit of this repository, `dpkg -l`, `ls -lR`,
CPython's own test runs, a failing unittest run, `gcc -v -H`, pydoc's HTML
pages, `cargo metadata` and sysconfig as JSON, and small ones (`git status`,
`uname`, `wc -l`). Nothing holds a secret: no environment, no process list.

Sessions take one of three client shapes, each with its client's real
envelope where one was captured (tests/clients/captured):
- `claude`: Anthropic Messages as Claude Code sends them (its system prompt
  and tools, `cache_control` on the system and on the last message);
- `codex`: OpenAI Responses as Codex sends them (its developer messages and
  tool namespace, `exec_command` calls);
- `chat`: OpenAI chat completions as the Agents SDK or LangChain send them
  (a short system prompt and one `shell` tool).

Run: python3 bench/replay/corpus.py OUT.json  (deterministic for a machine).
"""

import json
import os
import random
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# A fixed commit of this repository: the git outputs do not move with HEAD.
COMMIT = "14ad146"
OLDER = ["e184e5c", "8e8916d", "d0a300f", "16f89d7"]
CAP = 150_000

FAILING_TESTS = '''
import unittest

class Inventory(unittest.TestCase):
'''


def failing_suite():
    """A unittest module with real failures (dict diffs, tracebacks)."""
    lines = [FAILING_TESTS]
    for i in range(40):
        if i % 5 == 3:
            lines.append(f"    def test_item_{i:02d}(self):\n"
                         f"        got = {{f'key{{k}}': k * {i} for k in range(30)}}\n"
                         f"        want = {{f'key{{k}}': k * {i} + (k == 17) for k in range(30)}}\n"
                         f"        self.assertEqual(got, want)\n")
        elif i % 7 == 6:
            lines.append(f"    def test_item_{i:02d}(self):\n"
                         f"        import json\n"
                         f"        json.loads('{{\"item\": {i}, \"broken\": }}')\n")
        else:
            lines.append(f"    def test_item_{i:02d}(self):\n        self.assertTrue({i} >= 0)\n")
    lines.append("\nif __name__ == '__main__':\n    unittest.main(verbosity=2)\n")
    return "".join(lines)


def commands(tmp):
    """(name, shell command) of the big outputs, then of the small ones."""
    git = f"git -C {ROOT}"
    with open(os.path.join(tmp, "test_inventory.py"), "w") as f:
        f.write(failing_suite())
    with open(os.path.join(tmp, "probe.c"), "w") as f:
        f.write("#include <stdio.h>\n#include <sys/socket.h>\n#include <pthread.h>\n"
                "#include <netinet/in.h>\nint main(void) { return 0; }\n")
    big = [
        ("dpkg-l", "dpkg -l"),
        ("ls-lR", "ls -lR /usr/lib/python3.11"),
        ("git-log-stat", f"{git} log --stat -n 80 {COMMIT}"),
        ("git-grep", f"{git} grep -n 'pub fn' {COMMIT} -- src"),
        ("openapi-json", f"{git} show {COMMIT}:openapi/openapi.json"),
        ("pricing-rs", f"{git} show {COMMIT}:src/domain/pricing.rs"),
        ("cost-rs", f"{git} show {COMMIT}:src/domain/proxying/exchanges/cost.rs"),
        ("readme", f"{git} show {COMMIT}:README.md"),
        ("pydoc-json-html", f"cd {tmp} && python3 -m pydoc -w json >/dev/null && cat json.html"),
        ("pydoc-http-html", f"cd {tmp} && python3 -m pydoc -w http.client >/dev/null && cat http.client.html"),
        ("test-json", "python3 -m test test_json -v"),
        ("test-textwrap", "python3 -m unittest -v test.test_textwrap test.test_difflib"),
        ("failing-tests", f"cd {tmp} && python3 test_inventory.py"),
        ("gcc-v-H", f"cd {tmp} && gcc -v -H -Wall -c probe.c -o probe.o"),
        ("cargo-metadata", f"cd {ROOT} && cargo metadata --format-version 1 --no-deps --offline"),
        ("sysconfig-json", "python3 -c 'import json,sysconfig; print(json.dumps(sysconfig.get_config_vars(), indent=1, default=str))'"),
        ("find-doc", "find /usr/share/doc -maxdepth 2 | sort"),
    ] + [(f"git-show-{c}", f"{git} show --stat --patch {c}") for c in OLDER]
    small = [
        ("git-status", f"{git} log --oneline -n 12 {COMMIT}"),
        ("uname", "uname -sm"),
        ("wc-l", f"cd {ROOT} && git ls-tree -r --name-only {COMMIT} src/http | head -20"),
        ("cargo-toml-head", f"{git} show {COMMIT}:Cargo.toml | head -30"),
        ("python-version", "python3 --version"),
        ("date-epoch", "date -u -d @0"),
        ("ls-bench", f"{git} ls-tree --name-only {COMMIT} bench/"),
        ("git-shortlog", f"{git} shortlog -sn {COMMIT} | head"),
    ]
    return big, small


def run(command):
    """The command's output (stdout and stderr), cut at a line under CAP bytes."""
    done = subprocess.run(["bash", "-c", command], capture_output=True, timeout=300)
    text = (done.stdout + done.stderr).decode("utf-8", "replace")
    if len(text) > CAP:
        text = text[:text.rfind("\n", 0, CAP) + 1]
    return text


def needed_lines(text, rng, count):
    """`count` lines a model would quote: unique, 20-160 chars, not at either end."""
    lines = text.split("\n")
    seen = {}
    for line in lines:
        seen[line] = seen.get(line, 0) + 1
    middle = lines[10:-10] if len(lines) > 40 else lines
    pool = [l for l in middle if seen[l] == 1 and 20 <= len(l) <= 160 and l.strip()]
    return rng.sample(pool, min(count, len(pool)))


SHAPES = ["claude", "codex", "chat"]
# Claude Code middle-truncates a Bash output over 30,000 characters.
CLAUDE_BASH_MAX = 30_000


def view(shape, text):
    """The output as the shape's client sends it to the model: Claude Code
    keeps the head and tail of a long Bash output; Codex (with
    `tool_output_token_limit` raised, as the client suite runs it) and the
    frameworks send it whole."""
    if shape != "claude" or len(text) <= CLAUDE_BASH_MAX:
        return text
    half = CLAUDE_BASH_MAX // 2
    head = text[:text.rfind("\n", 0, half) + 1]
    tail_from = text.find("\n", len(text) - half) + 1
    cut = tail_from - len(head)
    return f"{head}\n... [{cut} characters truncated] ...\n\n{text[tail_from:]}"


def session(index, outputs, big, small, rng, turns, small_only):
    shape = SHAPES[index % 3]
    name = f"s{index:02d}-{shape}-{turns}t" + ("-small" if small_only else "")
    steps, script = [], []
    calls = []  # (step index, output key) of the calls so far
    for t in range(turns):
        user = f"Turn {t + 1}: "
        if t == 0:
            user = f"[replay session: {name}] " + user
        turn_steps = []
        follow_up = calls and not small_only and rng.random() < 0.15
        if follow_up:
            src, key = rng.choice(calls)
            user += "about the earlier output of `" + key + "`, which lines mattered?"
            needed = [[src, l] for l in needed_lines(view(shape, outputs[key]), rng, 1)]
        else:
            pool = small if small_only or rng.random() < 0.35 else big
            n_calls = 2 if rng.random() < 0.2 else 1
            needed = []
            keys = [rng.choice(pool)[0] for _ in range(n_calls)]
            user += "run " + " and ".join(f"`{k}`" for k in keys) + " and tell me what stands out."
            for key in keys:
                step = len(steps) + len(turn_steps)
                turn_steps.append({"call": key})
                calls.append((step, key))
                needed += [[step, l] for l in needed_lines(view(shape, outputs[key]), rng, rng.choice([1, 1, 2]))]
        quoted = "\n".join(l for _, l in needed)
        answer = ("Here is what stands out in the output; the line that answers the question is quoted "
                  "exactly below, and the rest looks as expected for this machine.\n" + quoted + "\n")
        turn_steps.append({"answer": answer, "needed": needed})
        steps += turn_steps
        script.append({"user": user, "steps": turn_steps})
    return {"name": name, "shape": shape, "turns": script}


def build():
    with tempfile.TemporaryDirectory() as tmp:
        big, small = commands(tmp)
        outputs = {}
        for name, command in big + small:
            print(f"corpus: running {name}", file=sys.stderr)
            outputs[name] = run(command)
    sessions = []
    lengths = [10, 12, 14, 16, 18, 20, 22, 25, 28, 30, 32, 35, 40, 45, 50, 55, 60, 24, 36, 48]
    for i, turns in enumerate(lengths):
        sessions.append(session(i, outputs, big, small, random.Random(i), turns, False))
    for j, turns in enumerate([10, 11, 12, 14]):
        i = len(lengths) + j
        sessions.append(session(i, outputs, big, small, random.Random(i), turns, True))
    return {"commit": COMMIT, "outputs": outputs, "commands": dict(big + small), "sessions": sessions}


def main():
    corpus = build()
    with open(sys.argv[1], "w") as f:
        json.dump(corpus, f)
    sizes = sorted(len(v) for v in corpus["outputs"].values())
    print(f"corpus: {len(corpus['sessions'])} sessions, {len(sizes)} outputs "
          f"({sizes[0]}-{sizes[-1]} bytes)", file=sys.stderr)


if __name__ == "__main__":
    main()
