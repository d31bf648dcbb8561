"""One exception family, with messages written for a user.

The CLI prints ``str(error)`` and exits with ``error.exit_code``; ``--debug`` shows the traceback.
"""

from __future__ import annotations


class AssayError(Exception):
    """Base of every error assay reports to a user."""

    exit_code = 2

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint

    def __str__(self) -> str:
        text = super().__str__()
        return f"{text}\n  hint: {self.hint}" if self.hint else text


class SuiteError(AssayError):
    """A suite file that cannot be read, or names something unknown."""


class ConfigError(AssayError):
    """The user's config.toml is malformed."""


class ToolchainError(AssayError):
    """No usable compiler / MPI, or a compile failed."""


class ProbeError(AssayError):
    """A probe produced output that breaks the probe contract, or failed its own validation."""


class ParseError(AssayError):
    """Third-party output that a parser cannot read; names the source and line."""

    def __init__(
        self,
        message: str,
        *,
        source: str = "<text>",
        line: int | None = None,
        hint: str | None = None,
    ) -> None:
        where = f"{source}:{line}" if line is not None else source
        super().__init__(f"{where}: {message}", hint=hint)
        self.source = source
        self.line = line


class StoreError(AssayError):
    """A run directory or the index cannot be read or written."""


class LaunchError(AssayError):
    """A job could not be started at all (missing launcher, bad hostfile...)."""


class NotFoundError(AssayError):
    """A run, metric or reference the user named does not exist."""

    exit_code = 3
