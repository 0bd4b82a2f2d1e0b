#!/bin/bash
set -e
cd /app
chmod 600 site/secret.key
chmod 755 site/bin/*.sh
find site/public -type d -exec chmod 755 {} +
find site/public -type f -exec chmod 644 {} +
