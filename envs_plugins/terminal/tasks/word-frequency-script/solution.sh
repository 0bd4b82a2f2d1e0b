#!/bin/bash
set -e
cd /app
cat > wordfreq.sh <<'EOF'
#!/bin/bash
n=${1:-3}
tr -cs 'A-Za-z' '\n' | tr 'A-Z' 'a-z' | grep -v '^$' | sort | uniq -c |
  sort -k1,1nr -k2,2 | head -n "$n" | awk '{print $1, $2}'
EOF
chmod +x wordfreq.sh
