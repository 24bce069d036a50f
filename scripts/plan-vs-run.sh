#!/bin/bash
# A real cluster run of the KRNvKR closure (coordinator + one worker of 2 threads) next to the
# plan's prediction.
B=${B:-./target/release/xqtb}
D=$(mktemp -d /tmp/val.XXXX)
PORT=7391
$B coordinator --listen 127.0.0.1:$PORT --data $D/coord --plan KRNvKR > $D/coord.log 2>&1 &
CP=$!
sleep 1
start=$(date +%s.%N)
/usr/bin/time -v $B worker --coordinator http://127.0.0.1:$PORT --cache $D/cache --threads 2 --exit-when-done > $D/worker.log 2>&1
end=$(date +%s.%N)
kill $CP; wait $CP 2>/dev/null
echo "makespan $(echo "$end - $start" | bc) s"
grep -E "Maximum resident|User time|System time|Elapsed" $D/worker.log
grep -E "job leased|committed" $D/coord.log | sed -E 's/\x1b\[[0-9;]*m//g' | cut -c1-160
$B plan KRNvKR --workers 1 --threads 2 | sed -n '/simulated/,$p'
$B plan KRNvKR | tail -9
rm -rf "$D"
