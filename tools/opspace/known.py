"""Known failures and kinds that cannot have a verified row.

KNOWN: bugs other developers are fixing (branch `lowerbugs`, issue 19 part
3). A failing case whose id matches one of these patterns is reported as
KNOWN and does not fail the run; once the fix is merged the case verifies and
the entry is stale (harmless, but remove it).

NO_ROW: kinds of the lowering table that cannot have a verified case, with
the reason.
"""
import re

LOWERBUGS = "branch lowerbugs"
KNOWN = [
    # (case id pattern, bug)
]

NO_ROW = {
}


def known_bug(case):
    for pattern, bug in KNOWN:
        if re.search(pattern, case["id"]):
            return bug
    return None
