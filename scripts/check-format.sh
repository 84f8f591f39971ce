#!/usr/bin/env bash
# Checks that every C++ file of the repository is formatted as .clang-format says (Google style,
# 100 columns), with Debian's clang-format. Exit 1 naming the files that are not; to fix them:
#   git ls-files '*.cc' '*.h' | xargs clang-format -i
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh format
mapfile -t files < <(git ls-files '*.cc' '*.h')
if ! clang-format --dry-run --Werror "${files[@]}" 2>/tmp/check-format.$$; then
  grep -o '^[^:]*:[0-9]*:[0-9]*: error' /tmp/check-format.$$ | cut -d: -f1 | sort -u |
    sed 's/^/check-format: not formatted: /'
  rm -f /tmp/check-format.$$
  echo "check-format: run: git ls-files '*.cc' '*.h' | xargs clang-format -i"
  exit 1
fi
rm -f /tmp/check-format.$$
echo "check-format: ok (${#files[@]} files)"
