#!/bin/bash
# Coordinator peak RSS and sample-check timings while a KRNvKR closure is generated (asian).
B=$1; PORT=${2:-7393}
D=$(mktemp -d /tmp/cpk.XXXX)
/usr/bin/time -v $B coordinator --listen 127.0.0.1:$PORT --data $D/coord --plan KRNvKR > $D/coord.log 2>&1 &
CP=$!
sleep 1
$B worker --coordinator http://127.0.0.1:$PORT --cache $D/cache --threads 2 --exit-when-done > $D/worker.log 2>&1
sleep 1
CPID=$(pgrep -P $CP)
grep -E "VmHWM|VmRSS" /proc/$CPID/status | tr '\n' ' '; echo
kill -INT $CPID; wait $CP 2>/dev/null
sed -E 's/\x1b\[[0-9;]*m//g' $D/coord.log | grep "sample check passed" | grep KRNvKR | grep -o "decode_secs.*" | cut -c1-120
grep -E "Maximum resident" $D/coord.log
rm -rf "$D"
