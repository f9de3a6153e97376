"""Compile budgets: `time_limit`, `CancelToken` and Ctrl-C end a compile with a named
exception instead of keeping a worker busy (issue 10). The grammar is the keyword list
of issue 11 (`start: (ID | "kw0" | ... )+`): with o200k_base its compiled mask path takes
seconds (a trie walk per lexer boundary, one per keyword prefix), so a tiny budget
really interrupts work in progress."""

import _thread
import signal
import threading
import time

import pytest

import stackmask


def keywords(n: int) -> str:
    alts = " | ".join(f'"kw{i}"' for i in range(n))
    return f'start: (ID | {alts})+\nID: /[a-z_][a-z0-9_]*/\n%ignore " "\n'


SLOW = keywords(600)


def test_zero_time_limit_fails_at_the_first_check(o200k_compiler):
    with pytest.raises(stackmask.CompileTimeLimit) as e:
        o200k_compiler.compile_lark(SLOW, time_limit=0)
    message = str(e.value)
    assert "time limit of 0 s (time_limit)" in message
    assert "front end stage" in message
    # A limit like the others: callers catching CompileLimitError see it too.
    assert isinstance(e.value, stackmask.CompileLimitError)
    with pytest.raises(stackmask.CompileTimeLimit, match="time_limit"):
        o200k_compiler.compile_regex("[a-z]+", time_limit=0.0)
    with pytest.raises(stackmask.CompileTimeLimit, match="time_limit"):
        o200k_compiler.compile_json_schema({"type": "integer"}, time_limit=0)


def test_a_tiny_time_limit_interrupts_a_long_compile(o200k_compiler):
    with pytest.raises(stackmask.CompileTimeLimit) as e:
        o200k_compiler.compile_lark(SLOW, time_limit=0.3)
    assert "time limit of 0.3 s" in str(e.value)


def test_a_generous_time_limit_compiles(o200k_compiler, json_source):
    g = o200k_compiler.compile_lark(json_source, "json.lark", time_limit=3600)
    assert g.stats["lr_states"] > 0


@pytest.mark.parametrize("bad", [-1, float("nan"), float("inf")])
def test_invalid_time_limits_are_refused(o200k_compiler, bad):
    with pytest.raises(ValueError, match="time_limit"):
        o200k_compiler.compile_lark('start: "a"', time_limit=bad)


def test_a_cancelled_token_cancels(o200k_compiler):
    token = stackmask.CancelToken()
    assert not token.cancelled
    token.cancel()
    assert token.cancelled
    with pytest.raises(stackmask.CompileCancelled, match="cancelled in the front end"):
        o200k_compiler.compile_lark('start: "a"', cancel=token)


def test_cancel_from_another_thread(o200k_compiler):
    token = stackmask.CancelToken()
    timer = threading.Timer(0.3, token.cancel)
    timer.start()
    try:
        with pytest.raises(stackmask.CompileCancelled, match="cancelled"):
            o200k_compiler.compile_lark(SLOW, cancel=token)
    finally:
        timer.cancel()


def test_ctrl_c_interrupts_a_compile(o200k_compiler):
    # interrupt_main raises KeyboardInterrupt in the main thread as SIGINT would; the
    # compile's wait loop runs the signal handlers, cancels the worker (through the
    # token it was given) and re-raises. Had the call ignored signals until the compile
    # ended, the interrupt would come after it, with the token never cancelled.
    #
    # Ctrl-C is pressed every 0.3 s until the token is cancelled, as a user presses it
    # again. A compile that ignored every press fails here, saying when they were sent.
    #
    # SIGINT gets Python's own handler for the test: a process started in the
    # background by a non-interactive shell (`cmd &`, as scripts and some CI runners
    # start it) inherits SIGINT ignored, Python then installs no handler, and
    # `interrupt_main` does nothing — which is what made this test fail "the first
    # run after a build" in earlier sessions (those runs were background jobs).
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    token = stackmask.CancelToken()
    done = threading.Event()
    presses = []

    def press_ctrl_c_until_cancelled():
        while not done.wait(0.3) and not token.cancelled:
            presses.append(round(time.monotonic() - start, 3))
            _thread.interrupt_main()

    start = time.monotonic()
    presser = threading.Thread(target=press_ctrl_c_until_cancelled)
    presser.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            o200k_compiler.compile_lark(SLOW, cancel=token)
            pytest.fail(
                f"the compile returned after {time.monotonic() - start:.3f} s; "
                f"Ctrl-C was pressed at {presses} s"
            )
    finally:
        done.set()
        presser.join()
        signal.signal(signal.SIGINT, previous)
    assert token.cancelled
    assert presses
