#!/usr/bin/env bash
# Fake terraform that will not stop: logs and ignores SIGINT and SIGTERM, and keeps a child that
# ignores them too, so only SIGKILL to the whole process group ends both.
log="$PWD/signals.log"
trap 'echo "got INT" >> "$log"' INT
trap 'echo "got TERM" >> "$log"' TERM
bash -c 'trap "" INT TERM; exec sleep 1000' &
echo $! > "$PWD/child.pid"
echo "started" >> "$log"
while :; do sleep 0.1; done
