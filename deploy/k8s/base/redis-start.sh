#!/bin/sh
# Redis with a password that is on no command line (`ps`) and in no environment.
#   redis-start.sh [REDIS-SERVER OPTIONS...]    start redis-server with requirepass
#   redis-start.sh ping [REDIS-CLI OPTIONS...]  health check: authenticated PING
# The password file: $REDIS_PASSWORD_FILE, default /run/secrets/plangate/redis-password. It is
# refused when shorter than 32 characters (Redis does not slow down AUTH guessing) or when it holds
# characters that would need quoting in redis.conf or escaping in a redis:// URL.
# Used by deploy/k8s/base (redis-statefulset.yaml) and deploy/compose.yaml.
set -eu
file=${REDIS_PASSWORD_FILE:-/run/secrets/plangate/redis-password}
if [ ! -r "$file" ]; then
    echo "redis-start.sh: cannot read the Redis password file $file" >&2
    exit 1
fi
password=
IFS= read -r password <"$file" || true
case $password in
*[!A-Za-z0-9._~-]*)
    echo "redis-start.sh: the Redis password in $file holds characters outside [A-Za-z0-9._~-]; make one with: openssl rand -hex 32" >&2
    exit 1
    ;;
esac
if [ "${#password}" -lt 32 ]; then
    echo "redis-start.sh: the Redis password in $file is empty or shorter than 32 characters; make one with: openssl rand -hex 32" >&2
    exit 1
fi
if [ "${1:-}" = ping ]; then
    shift
    # REDISCLI_AUTH, not `-a`: the password stays off redis-cli's command line.
    REDISCLI_AUTH=$password
    export REDISCLI_AUTH
    [ "$(redis-cli "$@" ping)" = PONG ]
    exit
fi
# `-`: the rest of the configuration comes from stdin (Redis >= 7), so requirepass is in no argv.
exec redis-server - "$@" <<END
requirepass $password
END
