"""Schemathesis hooks for Public/openapi.yaml: the custom string formats the schema uses, and a
serializer for the one text body it has no serializer for (a trickled ICE fragment).

`format: ean13` (a synthetic scene's EAN-13 code): 12 digits, or 13 whose last is the check
digit. The pattern beside it says only "12 or 13 digits"; without this strategy schemathesis
would send 13 random digits, which the server rightly refuses (400), as valid data.
"""
import schemathesis
from hypothesis import strategies as st


def _ean13(digits):
    check = (10 - sum(d * (1 if i % 2 == 0 else 3) for i, d in enumerate(digits)) % 10) % 10
    return "".join(map(str, digits + [check]))


_twelve = st.lists(st.integers(0, 9), min_size=12, max_size=12)
schemathesis.openapi.format("ean13", st.one_of(_twelve.map(lambda d: "".join(map(str, d))), _twelve.map(_ean13)))


# A trickled ICE fragment (PATCH /api/whep/{session}) is text, as the schema's string: sent as its
# UTF-8 bytes, so the fuzzer reaches the route's refusals (and 404 for the sessions it makes up).
@schemathesis.serializer("application/trickle-ice-sdpfrag")
def _fragment(ctx, value):
    return (value if isinstance(value, str) else str(value)).encode("utf-8")
