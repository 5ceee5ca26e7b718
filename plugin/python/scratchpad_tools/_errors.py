"""The package's two exceptions, apart so that the runtime and the adapters can raise and
catch them without importing the package's front."""

from __future__ import annotations


class ToolError(Exception):
    """A call the tools refused; nothing was changed.

    `kind` is the WIT error case: a tool's refusal (`invalid-argument`, `not-found`,
    `conflict`, `quota-exceeded`, `summariser`, `storage`, ...), a call that never reached
    a tool (`unknown-tool`, `invalid-arguments`), or `trap`: a call stopped by its CPU or
    memory bound or by a failure of the tool logic. The message is the server's text."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


class SummariserError(Exception):
    """Raise it from a summariser to say why there is no summary: `kind` is one of
    `not-configured`, `unauthorized`, `unavailable`, `failed`. Any other exception a
    summariser raises reads as `failed` with its message."""

    KINDS = ("not-configured", "unauthorized", "unavailable", "failed")

    def __init__(self, kind: str, message: str):
        if kind not in self.KINDS:
            raise ValueError(f"unknown summariser error kind {kind!r}: the kinds are {', '.join(self.KINDS)}")
        super().__init__(message)
        self.kind = kind
