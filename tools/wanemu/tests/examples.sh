#!/bin/bash
# Every example topology comes up, every cluster's front-end reaches every other public
# cluster's front-end (through multi-hop routes too), and goes down cleanly.
source "$(dirname "$0")/lib.sh" "$@"
[[ -d $EXAMPLES ]] || fail "no examples directory"

for f in "$EXAMPLES"/*.topo; do
    note "$(basename "$f")"
    wan_up "$f"
    fes=$("$WANEMU" hosts --kv | awk '/ role=frontend / { sub("host=", "", $1); print $1 }')
    for a in $fes; do
        for b in $fes; do
            [[ $a == "$b" ]] && continue
            wx "$a" -- ping -n -q -c 1 -w 5 -i 0.05 "$b" >/dev/null || fail "$a cannot ping $b in $f"
        done
    done
    "$WANEMU" down --name "$RUN" >/dev/null
    [[ -z $(ip netns list | grep "^wn\.$RUN\.") ]] || fail "namespaces left after down"
done
echo PASS
