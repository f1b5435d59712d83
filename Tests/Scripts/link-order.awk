# The list link-order.sh writes (see there), from three files:
#   1. callgrind's output (--demangle=no): the names of the functions that ran;
#   2. lld's link map: the input sections of .text, their addresses and sizes;
#   3. `nm -n` of the same binary: every function's address, in address order.
# Prints the names that ran, in address order, leaving out a name whose
# copies include one in a section over 64 KiB that no name with a single
# copy needs (ordering that name would move the whole section).

function hex(s,    i, c, v) {
  v = 0
  s = tolower(s)
  for (i = 1; i <= length(s); i++) {
    c = index("0123456789abcdef", substr(s, i, 1))
    if (c == 0) break
    v = v * 16 + c - 1
  }
  return v
}

FNR == 1 { file++ }

# 1. `fn=(12) name` or `cfn=(12) name`: a name appears with its number once.
file == 1 {
  if (match($0, /^c?fn=\([0-9]+\) /)) ran[substr($0, RLENGTH + 1)] = 1
  next
}

# 2. lld's map: 49 columns of VMA, LMA, size and alignment, then an output
#    section (no indent), an input section (8 spaces) or a symbol (16).
file == 2 {
  rest = substr($0, 50)
  if (rest !~ /^ /) { in_text = (rest == ".text"); next }
  if (in_text && rest ~ /^        [^ ]/) {
    sections++
    start[sections] = hex($1)
    size[sections] = hex($3)
  }
  next
}

# 3. nm: "address type name".
file == 3 {
  if (NF != 3 || $2 !~ /^[tTwW]$/ || !($3 in ran)) next
  address = hex($1)
  while (current < sections && start[current + 1] <= address) current++
  name = $3
  if (!(name in copies)) order[++names] = name
  copies[name]++
  section_of[name, copies[name]] = current
}

END {
  for (n = 1; n <= names; n++) {
    name = order[n]
    if (copies[name] == 1) needed[section_of[name, 1]] = 1
  }
  for (n = 1; n <= names; n++) {
    name = order[n]
    keep = 1
    for (k = 1; k <= copies[name]; k++) {
      s = section_of[name, k]
      if (size[s] > 65536 && !(s in needed)) keep = 0
    }
    if (keep) print name
  }
}
