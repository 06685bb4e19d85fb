"""Counts numbered messages in a receiver's FILE: every one of 0..TOTAL-1
must be there at least once, the duplicates at most MOST, torn lines at
most KILLS. A message is an RFC 5424 one ending in 'line NNNNNN' (sluice-log)
or 'relp NNNNNN' (the octet-counted feeder), with one header: a relay's
header around it would not match. Waits up to WAIT seconds for the last
ones to land. Prints the counts, exits 1 (an assertion) when they are wrong.

    python3 count_delivered.py FILE TOTAL KILLS MOST WHAT [WAIT]
"""
import collections, re, sys, time

out, total, kills, most, what = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
deadline = time.time() + (float(sys.argv[6]) if len(sys.argv) > 6 else 0)
body = rb"<14>1 \S+ \S+ \S+ \S+ \S+ - (?:line|relp) (\d{6})\n"
while True:
    seen = collections.Counter()
    torn = 0
    for line in open(out, "rb"):
        m = re.fullmatch(body, line)
        if not m:
            # A SIGKILL may stop the kernel in the middle of a write(2) to
            # FILE: that batch was not answered (it comes again), but its
            # part that landed is a torn line, to which the next one is
            # appended. At most one a kill.
            m = re.search(body[:-2] + rb"\n$", line)
            assert m and not line.startswith(m[0]), line
            torn += 1
        seen[int(m[1])] += 1
    if len(seen) == total or time.time() > deadline:
        break
    time.sleep(0.2)
missing = [i for i in range(total) if i not in seen]
dups = sum(c - 1 for c in seen.values())
print("  %s: %d of %d in the file, %d missing, %d duplicates, %d torn lines" % (what, len(seen), total, len(missing), dups, torn))
assert torn <= kills, torn
assert not missing, missing[:10]
assert dups <= most, (dups, most)
