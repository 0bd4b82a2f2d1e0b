#!/bin/bash
list=$1
dest=$2
mkdir $dest
count=0
for path in $(cat $list); do
  cp $path $dest/
  count=$((count + 1))
done
echo copied $count
