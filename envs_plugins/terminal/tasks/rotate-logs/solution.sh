#!/bin/bash
set -e
cd /app
cat > rotate.sh <<'EOF'
#!/bin/bash
cd "$1" || exit 1
for log in *.log; do
  [ -f "$log" ] || continue
  rm -f "$log.3"
  for i in 2 1; do
    [ -f "$log.$i" ] && mv "$log.$i" "$log.$((i + 1))"
  done
  mv "$log" "$log.1"
  : > "$log"
done
exit 0
EOF
chmod +x rotate.sh
