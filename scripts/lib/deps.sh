# Installs what swarmgate's scripts need, only when it is missing. Sourced by scripts/*.

# ensure_apt PACKAGE...: installs the Debian packages that are not installed yet.
ensure_apt() {
    local missing=()
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    ((${#missing[@]})) || return 0
    echo "installing Debian packages: ${missing[*]}" >&2
    local sudo=""
    [[ $(id -u) == 0 ]] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
}

# The build needs these to compile and link the C libraries' modules.
ensure_build_deps() {
    ensure_apt pkg-config libxml2-dev libcurl4-openssl-dev libssl-dev libsqlite3-dev
}

# ensure_python_env: a virtualenv in .venv with the independent checkers the tests and
# benchmarks use (never the product); exports SWARMGATE_PYTHON.
ensure_python_env() {
    local venv=".venv"
    if ! "$venv/bin/python" -c 'import m3u8, mpegdash' 2>/dev/null; then
        command -v python3 >/dev/null || ensure_apt python3
        python3 -m venv "$venv" 2>/dev/null || { ensure_apt python3-venv; rm -rf "$venv"; python3 -m venv "$venv"; }
        "$venv/bin/pip" install -q --disable-pip-version-check m3u8==6.0.0 mpegdash==0.4.1 >&2
    fi
    SWARMGATE_PYTHON="$(pwd)/$venv/bin/python"
    export SWARMGATE_PYTHON
}
