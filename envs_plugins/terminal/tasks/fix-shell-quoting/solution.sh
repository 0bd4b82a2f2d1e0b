#!/bin/bash
set -e
cd /app
cat > backup.sh <<'EOF'
#!/bin/bash
list=$1
dest=$2
mkdir -p -- "$dest"
count=0
while IFS= read -r path || [ -n "$path" ]; do
  [ -n "$path" ] || continue
  cp -- "$path" "$dest/"
  count=$((count + 1))
done < "$list"
echo "copied $count"
EOF
chmod +x backup.sh
