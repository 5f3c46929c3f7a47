"""The names users choose from, each with its descriptions: one table for every layer.

The estimator methods of Epsilon* (Negoescu et al. 2024, "Epsilon*: Privacy Metric for Machine
Learning Models"), the distribution families of the parametric method, the supremum searches, the
kinds of model output and the per-record losses. Each accepted value is a :class:`Name` with a
one-line ``summary`` (command-line help) and a longer plain-language ``description`` (the HTML
report and the docs); the ``Literal`` types beside each table list the same names for type checkers
(a test keeps them equal). Argument checks, ``choices=`` of the command line and the report's
wording all read this table.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Final, Literal, TypeVar, cast

from epsstar.exceptions import InvalidInputError

__all__ = [
    "ACCOUNTANTS",
    "ATTACKS",
    "ATTRIBUTE_RECORDS",
    "CANARY_DESIGNS",
    "DEFAULT_ATTACK",
    "DEFAULT_GATE",
    "DEFAULT_METHOD",
    "ENGINES",
    "FAMILIES",
    "FITTED_METHODS",
    "GATES",
    "GUESS_RULES",
    "LOSSES",
    "METHODS",
    "OUTPUT_KINDS",
    "SEARCHES",
    "STANDARDISATIONS",
    "TAIL_METHODS",
    "TESTED_LEVEL",
    "TRAINING_BOUNDS",
    "UTILITIES",
    "AccountantName",
    "AttackName",
    "AttributeRecords",
    "BoundName",
    "CanaryDesign",
    "EngineName",
    "Family",
    "GateRule",
    "GuessRule",
    "LossName",
    "Method",
    "Name",
    "Names",
    "OutputKind",
    "Search",
    "StandardiseOn",
    "UtilityName",
]

Method = Literal[
    "parametric",
    "empirical",
    "tails",
    "tails-crossfit",
    "tails-tested",
    "tails-shape-tested",
    "atoms-crossfit",
    "atoms-tested",
]
Family = Literal["normal", "gmm"]
Search = Literal["refine", "grid"]
OutputKind = Literal["probabilities", "logits"]
LossName = Literal["logit", "cross_entropy"]
GateRule = Literal["significant", "estimate", "lower-bound"]
GuessRule = Literal["both", "symmetric", "members-only", "nonmembers-only"]
BoundName = Literal["epsilon-delta", "gdp"]
EngineName = Literal["single", "dask"]
UtilityName = Literal["auroc", "accuracy"]
AccountantName = Literal["pld", "rdp"]
AttributeRecords = Literal["sampled", "all"]
StandardiseOn = Literal["population", "data", "none"]
CanaryDesign = Literal["random", "rare", "population"]

K = TypeVar("K", bound=str)


@dataclass(frozen=True, slots=True)
class Name:
    """One accepted value of an option and what it means.

    ``summary`` fits in a line of command-line help; ``description`` is plain
    language for readers of a report, written to complete a sentence such as
    "The headline figure …" (lower case, no final full stop).
    """

    name: str
    summary: str
    description: str

    def __post_init__(self) -> None:
        for field in ("name", "summary", "description"):
            if not str(getattr(self, field)).strip():
                raise InvalidInputError(f"a name needs a non-empty {field}. Found {self!r}.")


@dataclass(frozen=True, slots=True, eq=False)
class Names(Mapping[K, Name]):
    """The accepted values of one option (``option``, as error messages call it), in order.

    A read-only mapping from each name to its :class:`Name`: iterating gives the
    names, so a ``Names`` serves as ``choices=`` of argparse and in ``in`` tests.
    """

    option: str
    entries: tuple[Name, ...]

    def __post_init__(self) -> None:
        names = [entry.name for entry in self.entries]
        if not names or len(set(names)) != len(names):
            raise InvalidInputError(f"{self.option} needs distinct names. Found {names}.")

    def __getitem__(self, name: str) -> Name:
        for entry in self.entries:
            if entry.name == name:
                return entry
        raise KeyError(name)

    def __iter__(self) -> Iterator[K]:
        return iter(self.names)

    def __len__(self) -> int:
        return len(self.entries)

    def __contains__(self, value: object) -> bool:
        return any(entry.name == value for entry in self.entries)

    @property
    def names(self) -> tuple[K, ...]:
        return tuple(cast(K, entry.name) for entry in self.entries)

    def alternatives(self) -> str:
        """The names quoted for a message: ``'a' or 'b'``, ``'a', 'b' or 'c'``."""
        quoted = [repr(name) for name in self.names]
        return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"

    def check(self, value: object) -> K:
        """``value`` if it is one of the names, else a one-line error ending with it."""
        if value not in self:
            raise InvalidInputError(
                f"{self.option} must be one of {', '.join(self.names)}. Found {value!r}."
            )
        return cast(K, value)


#: Where a tested method's description names its leak test's level; a report of one audit
#: puts the level it used in its place.
TESTED_LEVEL: Final = "level 1 − confidence, 0.05 by default"

METHODS: Final[Names[Method]] = Names(
    "method",
    (
        Name(
            "parametric",
            "fitted CDFs (the Epsilon* paper's)",
            "fits a distribution to each side's transformed losses and takes the largest "
            "privacy ratio over all loss thresholds of the two fitted curves, as the Epsilon* "
            "paper does",
        ),
        Name(
            "empirical",
            "empirical CDFs",
            "uses the empirical distributions of the observed losses only",
        ),
        Name(
            "tails",
            "empirical body with generalised-Pareto tails",
            "uses the observed losses in the body and generalised-Pareto tails fitted "
            "beyond the most extreme records",
        ),
        Name(
            "tails-crossfit",
            "the tails fits, test chosen and scored on different halves of the data",
            "uses the observed losses in the body and generalised-Pareto tails beyond the "
            "most extreme records, with the attack's threshold chosen on one random half of "
            "the records and scored on the other half, so that picking the best of many "
            "thresholds does not inflate the figure",
        ),
        Name(
            "tails-tested",
            "tails-crossfit, or 0 when a held-out exact test finds no leak",
            "is the tails-crossfit estimate when a held-out exact test finds that the model "
            "tells its training records from population records better than chance (at "
            f"{TESTED_LEVEL}), and 0 when it does not, so that sampling noise alone does not "
            "read as a leak; on losses with few distinct values it is the atoms-tested estimate",
        ),
        Name(
            "tails-shape-tested",
            "tails-tested, with Gaussian-shift tails where the ROC curve is straight with slope 1",
            "is the cross-fitted estimate when a held-out exact test finds that the model "
            "tells its training records from population records better than chance (at "
            f"{TESTED_LEVEL}), and 0 when it does not; beyond the data its tails are powers, "
            "except where the binormal ROC curve of all records has slope 1 and keeps its "
            "shift into the tails (the Gaussian mechanism's shape, as DP-SGD gives), where "
            "they are a shift of normal scores; on losses with few distinct values it is the "
            "atoms-tested estimate",
        ),
        Name(
            "atoms-crossfit",
            "randomised tests at the distinct losses, chosen and scored on different halves",
            "uses the exact counts at each distinct loss value, including tests that call "
            "records at one value members at random, with the attack chosen on one random "
            "half of the records and scored on the other half",
        ),
        Name(
            "atoms-tested",
            "atoms-crossfit, or 0 when a held-out exact test finds no leak",
            "is the atoms-crossfit estimate when a held-out exact test finds that the model "
            "tells its training records from population records better than chance, and 0 "
            "when it does not; made for losses on a few values (trees, k-NN, rounded or "
            "saturated outputs)",
        ),
    ),
)
#: The methods that extrapolate generalised-Pareto (or Gaussian-shift) tails beyond the data.
TAIL_METHODS: Final[tuple[Method, ...]] = (
    "tails",
    "tails-crossfit",
    "tails-tested",
    "tails-shape-tested",
)
#: The methods whose headline comes from a fitted distribution or fitted tails (not from the
#: observed losses alone, as ``empirical`` and the atoms methods' do).
FITTED_METHODS: Final[frozenset[Method]] = frozenset({"parametric", *TAIL_METHODS})
#: The method used when none is given: the most accurate one measured in
#: ``docs/accuracy.md`` where something leaks, and 0 in at least 95 % of audits where
#: nothing does (the paper's estimator is ``"parametric"``).
DEFAULT_METHOD: Final[Method] = "tails-shape-tested"

FAMILIES: Final[Names[Family]] = Names(
    "family",
    (
        Name(
            "normal",
            "Normal distribution (the paper's)",
            "a Normal distribution fitted by maximum likelihood, the Epsilon* paper's choice",
        ),
        Name(
            "gmm",
            "Gaussian mixture, components chosen by BIC",
            "a mixture of Normal distributions whose number of components (1 to 20) is "
            "chosen by the Bayesian information criterion",
        ),
    ),
)

SEARCHES: Final[Names[Search]] = Names(
    "search",
    (
        Name(
            "refine",
            "bracketing and refinement",
            "brackets every local maximum of each ratio on a grid of both fits' quantiles "
            "and zooms in on it",
        ),
        Name(
            "grid",
            "the paper's 2-million-point grid",
            "evaluates the ratios on the Epsilon* paper's grid of 2 million quantile points, "
            "slower and never higher than the refined search",
        ),
    ),
)

OUTPUT_KINDS: Final[Names[OutputKind]] = Names(
    "outputs",
    (
        Name(
            "probabilities",
            "P(y=1), or rows of class probabilities summing to 1",
            "the model returns probabilities: one column P(y = 1) for a binary task, or one "
            "row of class probabilities summing to 1 per record",
        ),
        Name(
            "logits",
            "log-odds of class 1, or unnormalised class scores",
            "the model returns logits: the log-odds of class 1 for a binary task, or class "
            "scores whose softmax gives the probabilities; losses from logits need no clipping",
        ),
    ),
)

LOSSES: Final[Names[LossName]] = Names(
    "loss",
    (
        Name(
            "logit",
            "the Epsilon* paper's logit loss",
            "the logit loss of the Epsilon* paper, log((1 - p) / p) for the probability p of "
            "the true class: it stays informative where the model is very confident",
        ),
        Name(
            "cross_entropy",
            "cross-entropy",
            "the cross-entropy -log p for the probability p of the true class, the loss most "
            "models are trained with",
        ),
    ),
)

GATES: Final[Names[GateRule]] = Names(
    "gate",
    (
        Name(
            "significant",
            "Epsilon* above the limit, and a held-out test finds a leak (default)",
            "the gate fails when Epsilon* exceeds the limit and a held-out exact test finds "
            "that the model tells its training records from population records more often "
            "than chance; a model whose two loss distributions are the same fails it with "
            "probability at most 1 - confidence, whatever the losses look like",
        ),
        Name(
            "estimate",
            "Epsilon* above the limit",
            "the gate fails when the Epsilon* estimate exceeds the limit, which sampling noise "
            "alone can do when little data are audited",
        ),
        Name(
            "lower-bound",
            "the held-out Clopper-Pearson lower bound above the limit",
            "the gate fails when the held-out Clopper-Pearson lower bound on epsilon exceeds "
            "the limit, which happens with probability at most 1 - confidence for any model "
            "that satisfies (limit, delta)-DP, at the cost of missing leaks the counted "
            "rates cannot show",
        ),
    ),
)
DEFAULT_GATE: Final[GateRule] = "significant"

#: The one-run guessing rules of a training audit (``--guesses``), the first the default;
#: what each bounds is in :mod:`epsstar.statistics.auditing.one_run.guess_rules`.
GUESS_RULES: Final[Names[GuessRule]] = Names(
    "--guesses",
    (
        Name(
            "both",
            "the three rules below at a third of the error rate each, the largest bound kept "
            "(default)",
            "the audit bounded the symmetric rule and each one-sided rule at a third of the "
            "error rate, and kept the largest bound",
        ),
        Name(
            "symmetric",
            "'in' for the k most member-like canaries, 'out' for the k least",
            "the audit guessed 'in' for the canaries the model found most member-like and "
            "'out' for those it found least member-like",
        ),
        Name(
            "members-only",
            "'in' for the k most member-like, no guess on the rest: for trainers that leak "
            "on part of the canaries",
            "the audit guessed 'in' for the canaries the model found most member-like and "
            "made no guess on the rest",
        ),
        Name(
            "nonmembers-only",
            "'out' for the k least member-like, no guess on the rest: for trainers whose "
            "left-out canaries stand out, such as a model that memorises its training records",
            "the audit guessed 'out' for the canaries the model found least member-like and "
            "made no guess on the rest",
        ),
    ),
)

#: How the text canaries of a training audit of a language model are made
#: (``--canary-design``), the first the default. Each is a prefix (the first half of a
#: population record) and a secret, the part scored.
CANARY_DESIGNS: Final[Names[CanaryDesign]] = Names(
    "--canary-design",
    (
        Name(
            "random",
            "secrets of tokens drawn uniformly from the tokenizer's vocabulary (default)",
            "each secret was a sequence of tokens drawn uniformly from the tokenizer's vocabulary",
        ),
        Name(
            "rare",
            "secrets of the tokens rarest in the training records under the model's tokenizer",
            "each secret was a sequence of tokens drawn among those rarest in the training "
            "records under the model's tokenizer (Panda et al. 2025, \"Privacy auditing of "
            'large language models")',
        ),
        Name(
            "population",
            "in-distribution: a population record, its second half the secret",
            "each canary was a population record, its second half the secret: an "
            "in-distribution record, as the input canaries of tables",
        ),
    ),
)

AttackName = Literal[
    "loss", "lira", "rmia", "qmia", "beyond-baseline", "zlib", "mink", "minkpp", "ref", "lowercase"
]

ATTACKS: Final[Names[AttackName]] = Names(
    "attack",
    (
        Name(
            "loss",
            "global loss threshold (the Epsilon* paper's, default)",
            "the Epsilon* paper's test: a record is called a member when the target model's "
            "loss on it is below one threshold shared by all records",
        ),
        Name(
            "lira",
            "offline LiRA (Carlini et al. 2022), needs reference models",
            "offline LiRA (Carlini et al. 2022): a record is called a member when the target "
            "model is more confident on it than the reference models, which never saw it, "
            "make plausible under a Gaussian fitted to their confidences on that record",
        ),
        Name(
            "rmia",
            "offline RMIA (Zarifzadeh et al. 2024), needs reference models",
            "offline RMIA (Zarifzadeh et al. 2024): a record is called a member when the "
            "target model's probability of its label, relative to the reference models', "
            "beats that of most population records",
        ),
        Name(
            "qmia",
            "QMIA (Bertran et al. 2023), quantile regression, no reference models",
            "the QMIA test (Bertran et al. 2023): a record is called a member when the target "
            "model's loss on it is far below the loss it gives population records like it, as a "
            "quantile regression on population records predicts",
        ),
        Name(
            "beyond-baseline",
            "the loss corrected by the blind baseline's log-odds",
            "the model's leak beyond the blind baseline: a record is called a member when its "
            "loss says more about membership than the record itself does, the loss corrected "
            "by the log-odds of a classifier that never saw the model",
        ),
        Name(
            "zlib",
            "text: mean token loss over zlib-compressed length (Carlini et al. 2021)",
            "the zlib ratio of Carlini et al. (2021): a text record is called a member when the "
            "language model's mean token loss on it is low for how well zlib compresses it, "
            "so that text any model finds easy is not taken for memorised text",
        ),
        Name(
            "mink",
            "text: Min-K, the K percent least likely tokens (Shi et al. 2024)",
            "the Min-K% test (Shi et al. 2024): a text record is called a member when even its "
            "least likely tokens (the K % with the lowest probability) are likely under the model",
        ),
        Name(
            "minkpp",
            "text: Min-K++, token log-probabilities standardised (Zhang et al. 2024)",
            "the Min-K%++ test (Zhang et al. 2024): like Min-K%, on each token's log-probability "
            "standardised by the mean and spread of the model's log-probabilities over the "
            "vocabulary at that position, so that a record is called a member when its "
            "tokens are near the modes of the model's distribution",
        ),
        Name(
            "ref",
            "text: loss minus reference models' loss, needs --reference-models",
            "the reference-model likelihood ratio (Carlini et al. 2021): a text record is "
            "called a member when the target model's mean token loss on it is low compared "
            "with that of reference models which never saw it, such as the base model "
            "before fine-tuning",
        ),
        Name(
            "lowercase",
            "text: loss over the loss on the lower-case text (Carlini et al. 2021)",
            "the lowercase ratio of Carlini et al. (2021): a text record is called a member "
            "when the model's loss on it is low compared with its loss on the same text in "
            "lower case",
        ),
    ),
)
DEFAULT_ATTACK: Final[AttackName] = "loss"

#: The bounds that may decide a training audit's refutation (``--bound``), the first the
#: default; the methods each names are in :mod:`epsstar.audit.training_audit.result`.
TRAINING_BOUNDS: Final[Names[BoundName]] = Names(
    "--bound",
    (
        Name(
            "epsilon-delta",
            "the (epsilon, delta) bound, which holds for every trainer (default)",
            "holds for every trainer",
        ),
        Name(
            "gdp",
            "the mu-GDP bound: tighter, holds for trainers with a Gaussian trade-off curve "
            "such as DP-SGD",
            "holds only for trainers whose trade-off curve is Gaussian (e.g. DP-SGD)",
        ),
    ),
)

#: Where the work runs (``--engine``), the first the default; ``docs/scale.md``.
ENGINES: Final[Names[EngineName]] = Names(
    "engine",
    (
        Name(
            "single",
            "this machine's processes (default)",
            "the work ran in this machine's processes",
        ),
        Name(
            "dask",
            "one task per unit of work on a Dask cluster; needs the [dask] extra",
            "the work ran on a Dask cluster, one task per unit of work, the same records "
            "streamed partition by partition where the workers are",
        ),
    ),
)

#: The utility on the population data a landscape's vertical axis shows (``--utility``),
#: the first the default.
UTILITIES: Final[Names[UtilityName]] = Names(
    "utility",
    (
        Name(
            "auroc",
            "area under the ROC curve (default)",
            "the area under the ROC curve of the model's scores on the population data",
        ),
        Name(
            "accuracy",
            "share of records predicted right",
            "the share of the population data's records the model predicts right",
        ),
    ),
)

#: The privacy accountants of ``dp_accounting`` the trainer offers (``--accountant``), the
#: first the default; how each is run is in :mod:`epsstar.training.accounting`.
ACCOUNTANTS: Final[Names[AccountantName]] = Names(
    "accountant",
    (
        Name(
            "pld",
            "privacy loss distributions (default)",
            "privacy loss distributions composed exactly up to their discretisation, the "
            "tightest accounting of DP-SGD that dp_accounting offers",
        ),
        Name(
            "rdp",
            "Renyi DP, typically 5 to 20 percent larger",
            "the steps' Rényi differential privacy converted to (ε, δ), typically 5 to 20 % "
            "above the privacy loss distributions' ε",
        ),
    ),
)

#: The records whose distance bounds attribute inference at each step
#: (``--attribute-records``), the first the default; :mod:`epsstar.training.attribute`.
ATTRIBUTE_RECORDS: Final[Names[AttributeRecords]] = Names(
    "records",
    (
        Name(
            "sampled",
            "those sampled at the step (default, the paper's Algorithm 4)",
            "the largest distance over the records sampled at each step, as Algorithm 4 of "
            "the paper computes it",
        ),
        Name(
            "all",
            "every training record (slower, conservative)",
            "the largest distance over every training record at each step, slower and "
            "never below the sampled records' distance",
        ),
    ),
)

#: The table the trainer's standardiser (the exported model's mean and standard deviation) is
#: fitted on (``--standardise-on``); which one a run takes when none is named is
#: :mod:`epsstar.training.standardisation`'s rule.
STANDARDISATIONS: Final[Names[StandardiseOn]] = Names(
    "standardise-on",
    (
        Name(
            "population",
            "mean and std of --population, public data: inside the DP guarantee",
            "the mean and standard deviation of the population table, public data that are "
            "not the training records, so the DP guarantee covers the standardisation",
        ),
        Name(
            "data",
            "mean and std of the training table: outside the DP guarantee",
            "the mean and standard deviation of the training table, computed without noise, "
            "which the DP guarantee does not cover",
        ),
        Name(
            "none",
            "no standardisation (the identity): the features as they are",
            "no standardisation: the network reads the features as they are",
        ),
    ),
)
