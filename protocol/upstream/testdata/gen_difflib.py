# Regenerates difflib_golden.json from CPython's difflib, the reference the
# embedded server's diff must match byte for byte (agentsmithy.md 6.2).
#   python3 gen_difflib.py > difflib_golden.json
import difflib, json, random

def server_diff(abs_path, old, new):
    return "\n".join(difflib.unified_diff(
        old.splitlines(keepends=True), new.splitlines(keepends=True),
        fromfile="a/" + abs_path, tofile="b/" + abs_path, lineterm=""))

cases = [
    ("worked-example", "/home/dev/app/main.go",
     "package main\n\nfunc a() int {\n\treturn 1\n}\n", "package main\n\nfunc a() int {\n\treturn 2\n}\n"),
    ("no-final-newline", "/w/x.txt", "a\nb\nc", "a\nb\nC"),
    ("form-feed-fragment", "/w/x.txt", "a\nb\fc\nd\n", "a\nb\fc\nD\n"),
    ("create", "/w/new.txt", "", "one\ntwo\n"),
    ("delete-all", "/w/old.txt", "one\ntwo\n", ""),
    ("unicode-and-u2028", "/w/u.md", "caf\u00e9\nline\u2028sep\n\U0001F680\n", "caf\u00e9!\nline\u2028sep\n\U0001F680\n"),
    ("two-hunks", "/w/two.go", "".join("line %d\n" % i for i in range(30)),
     "".join(("LINE %d\n" % i) if i in (2, 25) else ("line %d\n" % i) for i in range(30))),
]
rnd = random.Random(42)
words = ["}", "", "return x", "if err != nil {", "foo()", "bar()", "x := 1", "// c"]
for n in range(8):
    size = rnd.choice([5, 40, 250])
    old = [rnd.choice(words) + "\n" for _ in range(size)]
    new = list(old)
    for _ in range(rnd.randint(1, 6)):
        op = rnd.choice("rid")
        i = rnd.randrange(len(new) + (op == "i"))
        if op == "r" and i < len(new):
            new[i] = rnd.choice(words) + " changed\n"
        elif op == "i":
            new.insert(i, rnd.choice(words) + " added\n")
        elif new:
            del new[min(i, len(new) - 1)]
    cases.append(("random-%d" % n, "/r/f%d.txt" % n, "".join(old), "".join(new)))

print(json.dumps([{"name": n, "abs": a, "old": o, "new": w, "want": server_diff(a, o, w)}
                  for n, a, o, w in cases], indent=1, ensure_ascii=False))
