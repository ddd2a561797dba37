#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Every element error the plugins post has a message, not only debug
text: an application shows the message. Reads each GST_ELEMENT_ERROR and
GST_ELEMENT_WARNING call in plugins/*.c and fails on a NULL or empty
message; the endings test (tests/elements/test_endings.c) then checks the
reason in the message of every error a pipeline can be driven into.

    error_messages.py SOURCE_ROOT"""
import re
import sys
from pathlib import Path


def calls(text, macro):
    """The argument lists of each `macro(` call, split at top-level commas."""
    for match in re.finditer(re.escape(macro) + r"\s*\(", text):
        depth, args, start, i = 1, [], match.end(), match.end()
        in_string = False
        while depth:
            c = text[i]
            if in_string:
                if c == "\\":
                    i += 1
                elif c == '"':
                    in_string = False
            elif c == '"':
                in_string = True
            elif c == "(":
                depth += 1
            elif c == ")":
                depth -= 1
            elif c == "," and depth == 1:
                args.append(text[start:i].strip())
                start = i + 1
            i += 1
        args.append(text[start:i - 1].strip())
        yield text.count("\n", 0, match.start()) + 1, args


def main():
    root = Path(sys.argv[1])
    bad, seen = [], 0
    for path in sorted((root / "plugins").glob("*.c")):
        text = path.read_text()
        for macro in ("GST_ELEMENT_ERROR", "GST_ELEMENT_WARNING"):
            for line, args in calls(text, macro):
                if len(args) != 5:
                    continue  # the macro's own definition or a wrapper
                seen += 1
                message = re.sub(r"\s+", "", args[3])
                if message in ("(NULL)", '("")', "()"):
                    bad.append(f"{path.relative_to(root)}:{line}: {macro} without a message")
    for b in bad:
        print(b)
    print(f"{seen} element errors and warnings, {len(bad)} without a message")
    sys.exit(1 if bad or seen == 0 else 0)


if __name__ == "__main__":
    main()
