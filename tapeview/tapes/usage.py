"""What each agent family records of its token usage (formats/*.md), decided and worded once: for
the tape's header, the session list (its Tokens column and sort) and the phase table."""

from __future__ import annotations

# Families whose files hold no token usage at all: their pages say so in words, not as dashes.
UNRECORDED = {
    "yachiyo": "yachiyo records no token usage",
    "araliya": "araliya's transcript records no token usage",
}
# Families that keep a session's totals beside the tape, none per entry (so none per phase either):
# what the tape's figure is where the agent wrote them.
SESSION_TOTALS = {
    "araliya": "araliya's spend.json: the session's input + cached + output tokens, as araliya totals them",
}
# Families that record some usage, but not per model call: what their tape's figure is (the tape),
# what the session list calls it beside the totals (figure), and why their phases show none (phase).
PARTIAL = {
    "nanobot": {
        "tape": "nanobot keeps only its last turn's usage (_last_usage): the tokens of that turn",
        "figure": "last turn",
        "phase": "nanobot keeps only its last turn's usage (see the context budget), none per phase",
    },
}


def records_tokens(kind: str) -> bool:
    return kind not in UNRECORDED


def unrecorded(kind: str, totals: bool = False) -> str:
    """What the tape's header says in place of its token figures, or "" where the family records them
    (`totals`: the tape has the session totals its family keeps beside it, SESSION_TOTALS)."""
    return "" if records_tokens(kind) or totals and kind in SESSION_TOTALS else f"not recorded by {kind}"


def tape_note(kind: str, totals: bool = False) -> str:
    """Why a tape's token total is missing, or what the one it shows is ("": nothing to say)."""
    if totals and kind in SESSION_TOTALS:
        return SESSION_TOTALS[kind]
    return UNRECORDED.get(kind) or PARTIAL.get(kind, {}).get("tape", "")


def figure(kind: str) -> str:
    """What a tape's token figure is when it is not the tape's total ("": a total, or none at all)."""
    return PARTIAL.get(kind, {}).get("figure", "")


def column_note() -> str:
    """The session list's Tokens heading: which figures its sort compares, and where the others go."""
    others = ", ".join(f"{kind}: {part['figure']}" for kind, part in PARTIAL.items())
    return f"The tokens each tape records in all; a figure that is no total ({others}) sorts after the totals"


def phase_note(kind: str) -> str:
    """Why a tape's phases show no tokens ("": the family reports them; these phases had none)."""
    return UNRECORDED.get(kind) or PARTIAL.get(kind, {}).get("phase", "")


def cost_text(cost: float) -> str:
    """A cost in USD as the pages show it: cents and below to four places ($0.0039), else two ($12.35)."""
    return f"${cost:,.4f}" if cost < 1 else f"${cost:,.2f}"
