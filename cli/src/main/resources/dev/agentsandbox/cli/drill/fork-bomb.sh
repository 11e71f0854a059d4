# $1: how many processes to start (the agent's pids cap and more), each living 60 s.
echo "drill: fork-bomb=starting"
n=0
while [ $n -lt "$1" ]; do sleep 60 & n=$((n+1)); done
echo "drill: forks-started=$n"
kill $(jobs -p) 2>/dev/null
