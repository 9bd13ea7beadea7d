"""Oracle: base64.b64decode(s) with its default (validate=False) per string.

Output per input string: {"hex": decoded bytes} or {"error": "ascii" |
"length" | "padding" | other message}.
"""
import base64
import binascii
import json
import sys

answers = []
for s in json.load(open(sys.argv[1])):
    try:
        answers.append({"hex": base64.b64decode(s).hex()})
    except binascii.Error as e:
        kind = "length" if "1 more than a multiple" in str(e) else "padding" if "padding" in str(e) else str(e)
        answers.append({"error": kind})
    except ValueError:
        answers.append({"error": "ascii"})
json.dump(answers, open(sys.argv[2], "w"))
