#!/bin/bash
set -e
cd /app
cd photos
LC_ALL=C md5sum * | LC_ALL=C sort -k1,1 -k2 | awk 'seen[$1]++ {print $2}' | xargs -r rm --
