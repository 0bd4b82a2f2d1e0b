#!/bin/bash
set -e
cd /app
cat > rpn.py <<'EOF'
import sys
from decimal import Decimal, InvalidOperation


def fail(message):
    print(f"error: {message}", file=sys.stderr)
    sys.exit(1)


stack = []
for token in sys.argv[1].split() if len(sys.argv) > 1 else []:
    if token in ('+', '-', '*', '/', 'swap'):
        if len(stack) < 2:
            fail('too few operands')
        b, a = stack.pop(), stack.pop()
        if token == 'swap':
            stack += [b, a]
        elif token == '/':
            if b == 0:
                fail('division by zero')
            stack.append(a / b)
        else:
            stack.append(a + b if token == '+' else a - b if token == '-' else a * b)
    elif token == 'dup':
        if not stack:
            fail('too few operands')
        stack.append(stack[-1])
    else:
        try:
            stack.append(Decimal(token))
        except InvalidOperation:
            fail(f'unknown token {token}')
if len(stack) != 1:
    fail('expected one value')
value = stack[0]
print(int(value) if value == value.to_integral_value() else format(value.normalize(), 'f'))
EOF
