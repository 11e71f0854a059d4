echo "drill: forever=started"
while :; do sleep 5; done
