# Shared by the ci/ scripts (sourced, not run): repository root, the CLI, log groups.
# shellcheck shell=bash

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# The CLI of the checkout's virtual environment (ci/setup.sh makes it); override to test others.
MK="${MIOPENKERNELS:-$ROOT/.venv/bin/miopenkernels}"

# The comment block under the shebang of the running script: its --help.
usage() {
    awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
}

die() {
    echo "error: $*" >&2
    exit 1
}

need_cli() {
    [ -x "$MK" ] || die "$MK not found: run 'bash ci/setup.sh' first"
}

# Collapsible sections in the Actions log; plain headings elsewhere.
group() {
    if [ "${GITHUB_ACTIONS:-}" = true ]; then echo "::group::$*"; else echo "== $*"; fi
}
endgroup() {
    if [ "${GITHUB_ACTIONS:-}" = true ]; then echo "::endgroup::"; fi
}

# `name=value` for later steps; a no-op outside Actions.
set_output() {
    if [ -n "${GITHUB_OUTPUT:-}" ]; then
        local delim="__ci_${RANDOM}${RANDOM}__"
        { echo "$1<<$delim"; printf '%s\n' "$2"; echo "$delim"; } >>"$GITHUB_OUTPUT"
    fi
}

# The one target name (`gfx90a-110`) that TEXT selects; an error if it selects none or several.
target_name() {
    local names
    names="$("$MK" matrix --targets "$1" --json \
        | "$ROOT/.venv/bin/python" -c 'import json,sys; [print(e["target"]) for e in json.load(sys.stdin)["include"]]')"
    [ "$(printf '%s\n' "$names" | wc -l)" = 1 ] \
        || die "'$1' selects several targets ($(echo "$names" | tr '\n' ' ')); name one"
    printf '%s\n' "$names"
}

# `target basename` per line for the targets that GLOB selects.
target_rows() {
    "$MK" matrix --targets "$1" --json \
        | "$ROOT/.venv/bin/python" -c 'import json,sys; [print(e["target"], e["basename"]) for e in json.load(sys.stdin)["include"]]'
}
