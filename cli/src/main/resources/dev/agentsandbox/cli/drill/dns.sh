# $1: a name that resolves outside; $2: an outside address tried as the resolver.
name=$1; resolver=$2
( out=$(timeout 15 nslookup "$name" 2>&1); echo "drill: resolver-exit=$?"; echo "$out" | sed -n 's/^Name:[[:space:]]*/drill: answer=/p' ) &
( out=$(timeout 15 nslookup "$name" "$resolver" 2>&1); echo "drill: direct-exit=$?"; echo "$out" | sed -n 's/^Name:[[:space:]]*/drill: answer=/p' ) &
wait
