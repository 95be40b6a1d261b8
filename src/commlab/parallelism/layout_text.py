"""``--layout tp=8,pp=16[,vp=V][,cp=C][,zero=Z][,dp=D][,cp_kind=ring|ulysses][,mb=B]``: one layout in words, parsed
into the keyword arguments of :func:`commlab.parallelism.evaluate.evaluate` (chapter 09, ``commlab plan``)."""
from __future__ import annotations

from commlab.errors import CommlabError
from commlab.parallelism.config import CP_KINDS

LAYOUT_KEYS = ("tp", "pp", "vp", "cp", "dp", "zero", "cp_kind", "mb")


def parse_layout(text: str, n_gpus: int) -> dict:
    """``tp=8,pp=16[,vp=V][,cp=C][,zero=Z][,dp=D][,cp_kind=ring|ulysses][,mb=B]`` as keyword arguments of
    :func:`evaluate`; dp defaults to what the GPUs leave."""
    values: dict[str, object] = {}
    for part in (p.strip() for p in str(text).split(",") if p.strip()):
        key, eq, value = part.partition("=")
        key = key.strip().lower()
        if not eq or key not in LAYOUT_KEYS:
            raise CommlabError(f"--layout {text!r}: unknown key {key!r}; the keys are {', '.join(LAYOUT_KEYS)}")
        if key == "cp_kind":
            if value.strip() not in CP_KINDS:
                raise CommlabError(f"--layout {text!r}: cp_kind must be one of {', '.join(CP_KINDS)}, got {value!r}")
            values[key] = value.strip()
            continue
        try:
            number = int(value)
        except ValueError:
            number = -1
        if number < (0 if key == "zero" else 1) or (key == "zero" and number > 3):
            expected = "0, 1, 2 or 3" if key == "zero" else "a whole number >= 1"
            raise CommlabError(f"--layout {text!r}: {key} must be {expected}, got {value!r}")
        values[key] = number
    tp, pp, cp = (int(values.get(k, 1)) for k in ("tp", "pp", "cp"))  # type: ignore[call-overload]
    if n_gpus % (tp * pp * cp):
        raise CommlabError(f"--layout {text!r}: tp x pp x cp = {tp * pp * cp} does not divide {n_gpus} GPUs")
    dp = n_gpus // (tp * pp * cp)
    if "dp" in values and values["dp"] != dp:
        raise CommlabError(f"--layout {text!r}: dp={values['dp']} but {n_gpus} GPUs / (tp x pp x cp) = {dp}")
    zero = int(values.get("zero", 1 if dp * cp > 1 else 0))  # type: ignore[call-overload]
    return {"tp": tp, "cp": cp, "pp": pp, "dp": dp, "zero": zero, "vp": int(values.get("vp", 1)),  # type: ignore
            "cp_kind": str(values.get("cp_kind", "ring")), "micro_batch": values.get("mb")}
