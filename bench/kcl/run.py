"""Time the KCL version of kiln-bench's web app (webapp.k beside this file) in-process.

Usage: run.py FLEET_DIR APPS_DIR RUNS

kcl-lib (PyPI) runs the KCL compiler and evaluator inside this Python process, so what is timed
is `API().exec_program` alone: no Python start-up, no import, no process per call -- the most
favourable figure for KCL. webapp.k is copied into FLEET_DIR (KCL reads files only below the
module root, the directory of the program) and reads APPS_DIR, relative to it: the same instance
files `kiln render` reads. Prints one JSON object: every run's seconds, the objects and bytes of
the last run's output (the harness checks the count against the fleet's).
"""

import json
import os
import shutil
import sys
import time

import kcl_lib.api as api


def main():
    fleet, apps, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
    here = os.path.dirname(os.path.abspath(__file__))
    shutil.copyfile(os.path.join(here, "webapp.k"), os.path.join(fleet, "kcl-webapp.k"))
    args = api.ExecProgramArgs(
        work_dir=fleet,
        k_filename_list=["kcl-webapp.k"],
        args=[api.Argument(name="apps", value=json.dumps(apps))],
    )
    kcl = api.API()
    times = []
    out = ""
    for _ in range(max(runs, 1)):
        start = time.perf_counter()
        result = kcl.exec_program(args)
        times.append(time.perf_counter() - start)
        if result.err_message:
            print(result.err_message, file=sys.stderr)
            sys.exit(1)
        out = result.yaml_result
    objects = 0 if not out.strip() else 1 + sum(1 for l in out.split("\n") if l == "---")
    json.dump({"seconds": times, "objects": objects, "bytes": len(out.encode())}, sys.stdout)
    print()


if __name__ == "__main__":
    main()
