"""The case loop of the Python checkers in tests/verify (test_dynamic_quant.py,
test_mobile_optimized.py): each case checked, a failure printed and counted,
and the last line "N passed, M failed" that ctest's PASS_REGULAR_EXPRESSION reads."""


def run_cases(cases, check, message_chars=600):
    """check(*case[1:]) for each case (name first); returns the exit status:
    0 when every case passed (and there was one)."""
    passed = failed = 0
    for name, *args in cases:
        try:
            check(name, *args)
        except Exception as e:  # noqa: BLE001
            failed += 1
            print(f"FAIL {name}: {type(e).__name__}: {str(e)[:message_chars]}")
            continue
        passed += 1
        print(f"ok   {name}")
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 and passed > 0 else 1
