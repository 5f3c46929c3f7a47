"""Which text canaries audit a language model's fine-tuning best: ``rare``, ``random`` or
``population`` secrets at the same number of canaries, in one run each (Steinke et al. 2023).

Everything is built here, nothing is downloaded (``benchmarks/text_throughput.py``'s
generator, tokenizer and tiny GPT-2: 2 layers, 32 wide, a context of 64 tokens, a vocabulary
of 300): ``--records`` training and as many population records of generated words, and a base
model fitted for one pass to 2,000 other records of the same generator, which every run
starts from (``--init``). The procedure is ``benchmarks/text_finetune.py``, a plain
(non-private) fine-tuning for ``--epochs`` passes (AdamW, lr 5e-3, batches of 16, 64 tokens),
run as ``--command``; ``--trainer-command`` puts another in its place, such as the DP
fine-tuning of ``epsstar train --text-column`` (its words with ``{train}``, ``{out}``,
``{init}`` and ``{seed}``).

Each design is audited once per claim of ``--claims`` with ``--canaries`` canaries, δ = 1e-5,
confidence 0.95, the default guessing rule: the first claim trains the run and keeps it in a
work folder, the others are bounded from the same run (a claim changes the bounds, not the
run). A row: the design, the claim, the (ε, δ) lower bound that decides and the μ-GDP
reading, whether the claim is refuted, the included canaries' mean and largest exposure
among the left-out ones (Carlini et al. 2019; ``n/a`` for population canaries) and the run's
training seconds.

    python benchmarks/text_training_audit.py                  # about 2 minutes on one core
    python benchmarks/text_training_audit.py --trainer-command "epsstar train --text-column \\
        text --data {train} --init {init} --out {out} --target-epsilon 4 --epochs 4 \\
        --batch-size 16 --max-length 64 --seed {seed}" --claims 4
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import shlex
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from text_finetune import fine_tune  # noqa: E402
from text_throughput import SIZES, Size, build, sentences  # noqa: E402

from epsstar.cli import main as epsstar_main  # noqa: E402
from epsstar.cli.common.text_table import aligned_table  # noqa: E402

DESIGNS = ("random", "rare", "population")
#: Token limit of the tiny model's fine-tuning (its context).
MAX_LENGTH = 64


def plain_command(epochs: int, lr: float) -> str:
    """The non-private fine-tuning of ``benchmarks/text_finetune.py`` as a command template."""
    script = shlex.quote(str(HERE / "text_finetune.py"))
    return (
        f"{shlex.quote(sys.executable)} {script} {{init}} {{train}} {{out}} --seed {{seed}} "
        f"--epochs {epochs} --lr {lr:g} --max-length {MAX_LENGTH} --threads 1"
    )


def prepare(folder: Path, records: int, seed: int, size: Size) -> Path:
    """The data and the base model every run starts from (see the module); its folder."""
    build(folder, size, records, seed)
    public = folder / "public.jsonl"
    most = max(4, (size.context - 2) // 3)
    public.write_text(
        "".join(json.dumps({"text": t}) + "\n" for t in sentences(2000, seed + 500, most)),
        encoding="utf-8",
    )
    fine_tune(folder / "model", public, folder / "base", seed=seed, epochs=1)
    return folder / "base"


def audit(
    folder: Path,
    design: str,
    claim: float,
    command: str,
    canaries: int,
    seed: int,
    k: int | None = None,
) -> dict[str, Any]:
    """One audit's JSON document (the run kept in, or read back from, the design's work
    folder)."""
    out = folder / f"{design}-{claim:g}-{seed}.json"
    with contextlib.redirect_stdout(io.StringIO()):  # the audit's summary: the table says it
        code = epsstar_main(
        [
            "audit-training",
            "--train", str(folder / "train.jsonl"),
            "--population", str(folder / "population.jsonl"),
            "--text-column", "text", "--init", str(folder / "base"),
            "--command", command, "--canary-design", design, "--canaries", str(canaries),
            "--max-length", str(MAX_LENGTH), "--claimed-epsilon", f"{claim:g}",
            "--delta", "1e-5", "--seed", str(seed), "--work", str(folder / f"work-{design}-{seed}"),
            "--json", str(out), "--quiet", *([] if k is None else ["--k", str(k)]),
        ]
        )  # fmt: skip
    if code not in (0, 1):
        raise SystemExit(f"the audit of the {design} design failed (exit code {code})")
    document: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    return document


def row(design: str, claim: float, seed: int, document: dict[str, Any]) -> list[str]:
    [text] = document["threat_models"]
    exposure = document["text_canaries"]["exposure"]
    gdp = text["epsilon_lower_gdp"]
    return [
        design,
        f"{claim:g}",
        str(seed),
        f"{text['epsilon_lower_bound']:.3f}",
        "n/a" if gdp is None else f"{gdp:.3f}",
        "yes" if document["refuted"] else "no",
        "n/a" if exposure is None else f"{exposure['mean']:.2f}",
        "n/a" if exposure is None else f"{exposure['largest']:.2f}",
        f"{document['training_runs'][0]['seconds']:.1f}",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1000, help="training records")
    parser.add_argument("--canaries", type=int, default=500)
    parser.add_argument("--epochs", type=int, default=4, help="of the plain fine-tuning")
    parser.add_argument("--claims", type=float, nargs="+", default=[1.0, 4.0])
    parser.add_argument("--designs", nargs="+", choices=DESIGNS, default=list(DESIGNS))
    parser.add_argument(
        "--trainer-command",
        default=None,
        metavar="TEMPLATE",
        help="the fine-tuning audited instead of benchmarks/text_finetune.py's",
    )
    parser.add_argument(
        "--k", type=int, default=None, help="the guessing rules' k (default: chosen by the audit)"
    )
    parser.add_argument("--lr", type=float, default=5e-3, help="of the plain fine-tuning")
    parser.add_argument("--layers", type=int, default=SIZES["tiny"].layers)
    parser.add_argument("--width", type=int, default=SIZES["tiny"].width, help="n_embd")
    parser.add_argument("--seed", type=int, default=0, help="of the data and the first audit")
    parser.add_argument(
        "--repeats",
        type=int,
        default=1,
        help="audits per design and claim (seeds seed, seed + 1, ...)",
    )
    args = parser.parse_args()
    tiny = SIZES["tiny"]
    size = Size(args.layers, args.width, tiny.heads, tiny.context, tiny.vocabulary)
    import torch
    import transformers

    torch.set_num_threads(1)
    logging: Any = transformers.utils.logging
    logging.set_verbosity_error()
    logging.disable_progress_bar()
    command = args.trainer_command or plain_command(args.epochs, args.lr)
    header = ["design", "claim", "seed", "eps lower", "mu-GDP", "refuted", "exposure", "max"]
    rows = [[*header, "train s"]]
    refuted: dict[tuple[str, float], int] = {}
    with tempfile.TemporaryDirectory(prefix="epsstar-text-audit-") as where:
        folder = Path(where)
        prepare(folder, args.records, args.seed, size)
        for seed in range(args.seed, args.seed + args.repeats):
            for design in args.designs:
                for claim in args.claims:
                    document = audit(folder, design, claim, command, args.canaries, seed, args.k)
                    rows.append(row(design, claim, seed, document))
                    refuted[design, claim] = refuted.get((design, claim), 0) + document["refuted"]
    print(
        f"{args.records} training records, {args.canaries} canaries per design, one run per "
        f"audit, {args.repeats} audit(s) per design and claim; "
        f"the fine-tuning: {'--trainer-command' if args.trainer_command else 'plain'}"
        f"{'' if args.trainer_command else f', {args.epochs} epochs'}"
    )
    print(aligned_table(rows, left_columns=1))
    for (design, claim), count in refuted.items():
        print(f"{design}, claim {claim:g}: refuted in {count} of {args.repeats} runs")


if __name__ == "__main__":
    main()
