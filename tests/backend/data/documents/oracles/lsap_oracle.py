"""Oracle: scipy.optimize.linear_sum_assignment on every case of the input.

Input: [{"rows", "cols", "maximize", "cost": row-major, numbers or the
strings "nan" / "inf" / "-inf"}]. Output: per case {"rows", "cols"} or
{"error": message}.
"""
import json
import sys

import numpy as np
from scipy.optimize import linear_sum_assignment

answers = []
for case in json.load(open(sys.argv[1])):
    values = [float(x) for x in case["cost"]]
    matrix = np.array(values, dtype=np.float64).reshape(case["rows"], case["cols"])
    try:
        r, c = linear_sum_assignment(matrix, maximize=case["maximize"])
        answers.append({"rows": r.tolist(), "cols": c.tolist()})
    except ValueError as e:
        answers.append({"error": str(e)})
json.dump(answers, open(sys.argv[2], "w"))
