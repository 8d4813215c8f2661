"""kvsim's errors: each carries the command line's message, the exit code
`kvsim` would end with and what it printed."""


class Error(Exception):
    """A kvsim command failed. ``exit_code`` is what ``kvsim`` would exit with,
    ``stderr`` what it would print, ``result`` what the command wrote anyway
    (a sweep with failed variants still writes its tables), else None."""

    def __init__(self, message, exit_code=None, stderr="", result=None):
        super().__init__(message)
        self.exit_code = exit_code
        self.stderr = stderr
        self.result = result


class InputError(Error, ValueError):
    """Bad input (``kvsim`` exits 2): a file, a flag, an output folder that
    kvsim may not replace. The message is the one ``kvsim`` prints after
    ``kvsim: error:``."""


class ConfigError(InputError):
    """Bad input located in a file or a ``--set``: one ``FILE:LINE:COL:
    key.path: problem (allowed)`` line per problem, also in ``diagnostics``
    (dicts with file, line, col, key_path, problem, allowed)."""

    def __init__(self, message, exit_code=None, stderr="", result=None, diagnostics=()):
        super().__init__(message, exit_code, stderr, result)
        self.diagnostics = list(diagnostics)


class ExpectFailed(Error, AssertionError):
    """The scenario's ``expect`` block failed (``kvsim run`` exits 1);
    ``failures`` lists one line per failed expectation."""

    def __init__(self, message, exit_code=1, stderr="", result=None, failures=()):
        super().__init__(message, exit_code, stderr, result)
        self.failures = list(failures)


class CheckFailed(Error, AssertionError):
    """A numerics check of the run failed (``kvsim`` exits 1)."""


class InternalError(Error, RuntimeError):
    """kvsim itself failed (``kvsim`` exits 3), or a study's variants failed
    for a reason that is kvsim's."""


class OutOfMemory(Error, MemoryError):
    """The machine ran out of memory (``kvsim`` exits 2)."""


_KINDS = {"input": InputError, "check": CheckFailed, "internal": InternalError,
          "memory": OutOfMemory}
_EXPECT_PREFIX = "kvsim: expect failed: "


def _raise(outcome, result=None):
    kind = outcome["kind"]
    common = dict(exit_code=outcome["exit_code"], stderr=outcome["stderr"], result=result)
    if kind == "config":
        raise ConfigError(outcome["message"], diagnostics=outcome["diagnostics"], **common)
    if kind == "" and outcome["exit_code"] == 1:
        failures = [line[len(_EXPECT_PREFIX):] for line in outcome["stderr"].splitlines()
                    if line.startswith(_EXPECT_PREFIX)]
        raise ExpectFailed("\n".join(failures) or outcome["stderr"].strip(),
                           failures=failures, **common)
    raise _KINDS.get(kind, InternalError)(outcome["message"] or outcome["stderr"].strip(),
                                          **common)


# Shown as kvsim.ConfigError (not kvsim._errors.ConfigError) in tracebacks.
for _error in (Error, InputError, ConfigError, ExpectFailed, CheckFailed, InternalError,
               OutOfMemory):
    _error.__module__ = "kvsim"
del _error
