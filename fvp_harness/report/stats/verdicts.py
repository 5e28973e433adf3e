"""The verdict rules: a primary comparison's verdict from the CI of its saving (``decide_verdict``),
a gate's from the CI of its change (``decide_gate``), and the minimum-effect expectation a verdict
gives (``effect_expectation``).
"""

from __future__ import annotations

from fvp_harness.report import format as fmt
from fvp_harness.report.stats.findings import Expectation, GateVerdict, Status, Verdict

__all__ = ["decide_exact", "decide_gate", "decide_verdict", "effect_expectation"]


def decide_verdict(
    ci_low: float | None,
    ci_high: float | None,
    p_value: float | None,
    min_effect: float,
    alpha: float = 0.05,
) -> tuple[Verdict, str]:
    """The verdict from the CI of the saved % (positive = candidate faster), the p-value and the
    minimum effect m.

    - no change: the whole CI lies within [-m, +m];
    - faster: the whole CI lies above +m, and p < alpha (when there is a p-value);
    - slower: the whole CI lies below -m, and p < alpha (when there is a p-value);
    - inconclusive: anything else (the CI straddles a boundary, or the test disagrees with the CI).
    A missing CI (too few samples, zero baseline) is inconclusive.
    """
    if ci_low is None or ci_high is None:
        return "inconclusive", "no confidence interval (too few samples or a zero baseline)"
    ci = f"CI {fmt.saved_interval(ci_low, ci_high)}"
    band = f"the ±{min_effect:g}% that counts as no change"
    if -min_effect <= ci_low and ci_high <= min_effect:
        return "no change", f"{ci} lies inside {band}"
    significant = p_value is None or p_value < alpha
    p_text = f"p = {p_value:.3g}" if p_value is not None else ""
    if ci_low > min_effect or ci_high < -min_effect:
        side = "saving" if ci_low > min_effect else "loss"
        if significant:
            return ("faster" if side == "saving"
                    else "slower"), f"{ci}: all of it a {side} beyond {band}"
        return "inconclusive", f"{ci} lies beyond {band}, but {p_text} is not below {alpha:g}"
    return "inconclusive", f"{ci} overlaps {band}: more repetitions would settle it"


def decide_gate(ci_low: float | None, ci_high: float | None,
                allowed: float) -> tuple[GateVerdict, Status]:
    """A gate's verdict from the CI of the change (positive = worse) and the largest allowed
    regression: ``violated`` when the whole CI lies above ``allowed``, ``within`` when it lies at or
    below it, else ``inconclusive`` (also without a CI), which counts as unverified."""
    if ci_low is None or ci_high is None:
        return "inconclusive", "unverified"
    if ci_low > allowed:
        return "violated", "fail"
    if ci_high <= allowed:
        return "within", "pass"
    return "inconclusive", "unverified"


def decide_exact(saved: float, min_effect: float, size: bool = True) -> tuple[Verdict, str]:
    """The verdict of an exact saving (a size every run measured the same, in %): no change within
    ±m, else smaller (``faster``) or larger (``slower``); no interval and no test, the numbers are
    not samples of noise. ``size=False``: another metric every sample of which was one number in
    each build (NPU cycles): the same rule, its change read lower or higher."""
    band = f"the ±{min_effect:g}% that counts as no change"
    verdict: Verdict = "no change"
    if abs(saved) > min_effect:
        verdict = "faster" if saved > 0 else "slower"
    if not size:
        amount = f"{abs(saved):.1f}%" if abs(saved) >= 0.05 else f"{abs(saved):.2g}%"
        moved = "identical" if saved == 0 else f"{amount} {'lower' if saved > 0 else 'higher'}"
        where = "inside" if verdict == "no change" else "beyond"
        same = "every sample of each build the same number"
        return verdict, f"exact ({same}): {moved}, {where} {band}"
    change = f"{-saved:+.1f}%" if round(saved, 1) else "no change"
    if verdict == "no change":
        return verdict, f"exact: {change}, inside {band}"
    return verdict, f"exact: {change} ({'smaller' if saved > 0 else 'larger'}), beyond {band}"


def effect_expectation(model: str, verdict: Verdict, reason: str, saved: float | None,
                       m: float) -> Expectation:
    """The minimum-effect expectation: the candidate must not be slower by more than ``min_effect``.

    ``slower`` fails it; ``not measured`` and ``inconclusive`` leave it unverified; faster and no
    change pass.
    """
    if verdict == "slower":
        status: Status = "fail"
    elif verdict in ("not measured", "inconclusive"):
        status = "unverified"
    else:
        status = "pass"
    shown = f"{fmt.saving_phrase(saved)}; " if saved is not None else ""
    return Expectation("min_effect", model, f"not more than {m:g}% slower", status,
                       f"{verdict}: {shown}{reason}")
