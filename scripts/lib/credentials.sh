# shellcheck shell=bash
# Credentials of a jobwheel stack, in one directory that is 0700 with files created 0600
# through the umask (never chmod-ed after they are written):
#   admin, executor, ...          random bootstrap tokens (64 hex digits), as named
#   scheduler.key, scheduler.pub  the scheduler's Ed25519 private and public key (PEM)
#   dispatcher.key, dispatcher.pub  the dispatchers' key pair
# The scheduler holds scheduler.key, each dispatcher dispatcher.key and scheduler.pub, the
# registry dispatcher.pub, executors only the two .pub files (see docs/security.md).
# Files that exist are kept, so a second run reuses them.
#
#   make_credentials DIR [TOKEN_NAME...]   (default tokens: admin executor)
make_credentials() {
  local dir=$1
  shift
  local tokens=("$@")
  [ ${#tokens[@]} -gt 0 ] || tokens=(admin executor)
  (
    umask 077
    mkdir -p "$dir" || exit 1
    # A directory left by an older version may be readable by others: close it before
    # anything is written into it.
    if [ "$(stat -c %a "$dir")" != 700 ]; then chmod 700 "$dir" || exit 1; fi
    for t in "${tokens[@]}"; do
      if [ ! -s "$dir/$t" ]; then
        head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$dir/$t" || exit 1
      fi
    done
    for k in scheduler dispatcher; do
      if [ ! -s "$dir/$k.key" ]; then
        rm -f "$dir/$k.pub"
        openssl genpkey -algorithm ed25519 -out "$dir/$k.key" || exit 1
      fi
      if [ ! -s "$dir/$k.pub" ]; then
        openssl pkey -in "$dir/$k.key" -pubout -out "$dir/$k.pub" || exit 1
      fi
    done
  )
}
