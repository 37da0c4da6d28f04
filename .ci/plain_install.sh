#!/usr/bin/env bash
# The plain-install stage of .ci/run (issue 32): what a user gets from the package, not what CI's
# own venv (every extra, the dev tools) happens to have.
#
#   1. A fresh venv with `pip install .` (no extra, no dev package): .ci/plain_install_check.py
#      imports every module (a missing extra must be named), runs the ReAct preset against
#      `jianmu-like mock` with each tool protocol (native, json, text, auto), has `jianmu-like
#      serve` answer a /v1/chat/completions round trip, and checks that each optional feature
#      (postgres, durable, otel, local, llama-cpp) names its extra.
#   2. A second fresh venv runs the README's main job, the line copied from README.md (so the
#      README cannot drift from what CI runs): install with the `local` extra, pull the weights,
#      answer "What is 25 * 4 + 10?" on the embedded model; the answer must contain 110.
#
# Run from the root of a checkout (.ci/run runs it in its fresh clone). Needs PyPI, and
# libgomp.so.1 for the embedded model (.ci/run installs it). Every step has a timeout.
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
started=$SECONDS

echo "plain install: pip install . (no extras)"
python3 -m venv "$work/plain"
timeout 600 "$work/plain/bin/python" -m pip install --quiet --disable-pip-version-check .
timeout 600 "$work/plain/bin/python" .ci/plain_install_check.py

# The README's main job, verbatim: the one line of README.md that installs the `local` extra.
main_job=$(grep -m1 -E "^pip install -e '\.\[local\]' && " README.md) \
    || { echo "plain install: README.md has no main-job line (pip install -e '.[local]' && ...)" >&2; exit 1; }
echo "plain install: the README's main job: $main_job"
python3 -m venv "$work/local"
out="$work/main-job.txt"
if ! (PATH="$work/local/bin:$PATH" VIRTUAL_ENV="$work/local" timeout 900 bash -euo pipefail -c "$main_job" \
        </dev/null 2>&1 | tee "$out"); then
    echo "plain install: FAILED: the README's main job failed" >&2
    exit 1
fi
# The answer is the transcript's last line but one (the last is the run's summary).
if ! grep -q '110' <(tail -n 3 "$out"); then
    echo "plain install: FAILED: the README's main job did not answer 110" >&2
    exit 1
fi
for dev in httpx pytest playwright psycopg; do
    if "$work/local/bin/python" -c "import $dev" 2>/dev/null; then
        echo "plain install: FAILED: '.[local]' brought the dev package $dev" >&2
        exit 1
    fi
done
echo "plain install: all stages passed in $((SECONDS - started)) s"
