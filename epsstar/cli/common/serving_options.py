"""``--connect-timeout``, ``--read-timeout``, ``--retries``, ``--backoff``, ``--rate-limit``
and ``--served-output`` of ``epsstar audit``: how the server of a served model (a URL as
MODEL, docs/served-models.md) is reached. Their defaults are those of
:class:`~epsstar.audit.inputs.served.Serving`."""

from __future__ import annotations

import argparse

from epsstar.audit.inputs.served import DEFAULT_SERVING, MAX_RETRIES, Serving, is_url
from epsstar.exceptions import InvalidInputError

__all__ = ["add_serving_options", "serving_option"]

#: The fields of :class:`Serving`, each the destination of its option.
_FIELDS = ("connect_timeout", "read_timeout", "retries", "backoff", "rate", "output")


def add_serving_options(parser: argparse.ArgumentParser) -> None:
    """The options of a served model; each is refused with a model file."""
    default = DEFAULT_SERVING
    group = parser.add_argument_group("served models (MODEL is a URL)")
    group.add_argument(
        "--connect-timeout",
        type=float,
        default=None,
        metavar="S",
        help=f"seconds to open a connection to the server (default {default.connect_timeout:g})",
    )
    group.add_argument(
        "--read-timeout",
        type=float,
        default=None,
        metavar="S",
        help=f"seconds to wait for each answer (default {default.read_timeout:g})",
    )
    group.add_argument(
        "--retries",
        type=int,
        default=None,
        metavar="N",
        help=f"times a request is sent again after a failed connection or an answer 429, 502, "
        f"503 or 504, 0 to {MAX_RETRIES} (default {default.retries})",
    )
    group.add_argument(
        "--backoff",
        type=float,
        default=None,
        metavar="S",
        help=f"back-off of the retries: the second waits 2×S seconds, each later one twice as "
        f"long, unless the server says when (Retry-After) (default {default.backoff:g})",
    )
    group.add_argument(
        "--rate-limit",
        dest="rate",
        type=float,
        default=None,
        metavar="R",
        help="at most R requests per second (default: no limit)",
    )
    group.add_argument(
        "--served-output",
        dest="output",
        default=None,
        metavar="NAME",
        help="the output of an Open Inference Protocol server to read, e.g. predict_proba "
        "for MLServer's scikit-learn runtime (default: the one the model's metadata lists)",
    )


def serving_option(args: argparse.Namespace) -> Serving:
    """How the served model of ``args.model`` is reached; with a model file, none of the
    options may be given. (A value :class:`Serving` refuses is named by its flag where the
    command line reports the error.)"""
    given = {name: getattr(args, name) for name in _FIELDS if getattr(args, name) is not None}
    if given and not is_url(args.model):
        flags: dict[str, str] = getattr(args, "option_flags", {})
        name = next(iter(given))
        raise InvalidInputError(
            f"{flags.get(name, name)} applies to a served model (MODEL a URL, http://...). "
            f"Found the model file {args.model!r}."
        )
    return Serving(**given) if given else DEFAULT_SERVING
