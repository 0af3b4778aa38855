#!/usr/bin/env bash
# Install requirement files into a virtualenv, with uv when it can be had, else pip.
#
#   scripts/install-requirements.sh .venv requirements.txt [more.txt ...]
#
# uv (pinned below) is used from PATH, or from the venv, or bootstrapped into the venv
# with pip; when none works the install falls back to pip. uv does not read pip's
# configuration, so the package registry this machine is configured with is handed to it
# here, read from `pip config list` at run time (find-links, index-url, extra-index-url,
# constraint, cert; the PIP_* environment included). UV=0 forces pip.
set -euo pipefail
[ "$#" -ge 2 ] || { echo "usage: $0 VENV REQUIREMENTS..." >&2; exit 2; }
venv="$1"; shift
py="$venv/bin/python"
UV_VERSION="0.13.9"

pip_install() {
  "$py" -m pip install --quiet --disable-pip-version-check "$@"
}

find_uv() {
  local candidate
  for candidate in "$venv/bin/uv" "$(command -v uv 2>/dev/null || true)"; do
    [ -n "$candidate" ] && [ -x "$candidate" ] && "$candidate" --version >/dev/null 2>&1 \
      && { echo "$candidate"; return 0; }
  done
  return 1
}

# pip's configuration as uv options, one per line (values may hold spaces: one a line).
uv_registry_options() {
  "$py" -m pip config list 2>/dev/null | "$py" -c '
import shlex, sys
values = {}
for line in sys.stdin:
    key, _, raw = line.strip().partition("=")
    if not raw:
        continue
    name = key.rsplit(".", 1)[-1]
    try:
        words = shlex.split(raw)
    except ValueError:
        continue
    value = " ".join(words)
    # later lines (user, site, the environment) override earlier ones (global)
    values[name] = value
flags = {"find-links": "--find-links", "index-url": "--index-url",
         "extra-index-url": "--extra-index-url", "constraint": "--constraint"}
for name, flag in flags.items():
    for item in values.get(name, "").split():
        print(flag); print(item)
if "cert" in values:
    print("--cert"); print(values["cert"])
'
}

use_uv() {
  local uv="$1"; shift
  local args=() cert="" line
  local -a lines=()
  mapfile -t lines < <(uv_registry_options)
  local i=0
  while [ "$i" -lt "${#lines[@]}" ]; do
    if [ "${lines[$i]}" = "--cert" ]; then cert="${lines[$((i + 1))]}"
    else args+=("${lines[$i]}" "${lines[$((i + 1))]}"); fi
    i=$((i + 2))
  done
  local reqs=()
  for line in "$@"; do reqs+=(-r "$line"); done
  # pip's resolution across indexes (best version anywhere), not uv's first index wins.
  SSL_CERT_FILE="${cert:-${SSL_CERT_FILE:-}}" UV_NO_PROGRESS=1 \
    "$uv" pip install --quiet --python "$py" --index-strategy unsafe-best-match \
    "${args[@]}" "${reqs[@]}"
}

if [ "${UV:-1}" != "0" ]; then
  uv=$(find_uv || true)
  if [ -z "$uv" ] && pip_install "uv==$UV_VERSION" >/dev/null 2>&1; then
    uv=$(find_uv || true)
  fi
  if [ -n "$uv" ]; then
    if use_uv "$uv" "$@"; then exit 0; fi
    echo "uv could not install the requirements; falling back to pip" >&2
  else
    echo "uv not available; installing with pip" >&2
  fi
fi
reqs=()
for r in "$@"; do reqs+=(-r "$r"); done
pip_install "${reqs[@]}"
