# SPDX-License-Identifier: BSD-2-Clause
"""seqstore.transforms: the C library's built-in per-example transforms, for
seqstore.Loader(..., transforms=[...]).

    from seqstore.transforms import RandomCrop, TokenMask
    loader = seqstore.Loader(store, batch_size=32, shuffle=True, seed=1,
                             transforms=[RandomCrop("tokens", 512),
                                         TokenMask("tokens", mask_value=3, vocab=32000)])

They run in C on the loader's threads, on a private copy of each example,
before collation, in list order. Randomness is a pure function of (loader
seed, epoch, example index, position in the list), as in C
(seqstore/transform.h): an epoch is augmented identically with any thread
count and after resuming from state_dict(); another epoch differs. Each
transform names one of the loader's output fields (`fields=`; all by
default). The C library checks the parameters (InvalidArgumentError, a
ValueError, with its message); errors met while transforming (a label
outside the table, a dtype the transform cannot handle) are raised by the
loader's next batch, naming the example.
"""
from __future__ import annotations

import numbers
from typing import Any, Optional, Sequence, Tuple

import numpy as np
import numpy.typing as npt

__all__ = ["RandomCrop", "GaussianNoise", "TokenMask", "TokenDrop", "Standardize", "LabelMap"]


def _name(field):
    if not isinstance(field, str):
        raise TypeError("a transform's field is named by a str, not %r" % (field,))
    return field


def _real(what, v):
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise TypeError("%s is a number, not %r" % (what, v))
    return float(v)


def _int(what, v, minimum):
    if isinstance(v, bool) or not isinstance(v, numbers.Integral):
        raise TypeError("%s is an int, not %r" % (what, v))
    if v < minimum:
        raise ValueError("%s must be >= %d, not %d" % (what, minimum, v))
    return int(v)


class Transform:
    """Base of the built-ins: `spec()` is the tuple the extension builds the C
    transform from."""

    field: str

    def spec(self) -> Tuple[Any, ...]:
        raise NotImplementedError

    def __repr__(self) -> str:
        s = self.spec()
        return "%s(%r, %s)" % (type(self).__name__, s[1], ", ".join(repr(x) for x in s[2:]))


class RandomCrop(Transform):
    """A sequence longer than max_length keeps max_length steps from a random
    start (uniform over the length - max_length + 1 starts); shorter ones and
    fixed fields are unchanged."""

    def __init__(self, field: str, max_length: int) -> None:
        self.field, self.max_length = _name(field), _int("max_length", max_length, 1)

    def spec(self) -> Tuple[Any, ...]:
        return ("random_crop", self.field, self.max_length)


class GaussianNoise(Transform):
    """x += sigma * N(0, 1) on every element of an f32 or f64 field."""

    def __init__(self, field: str, sigma: float) -> None:
        self.field, self.sigma = _name(field), _real("sigma", sigma)

    def spec(self) -> Tuple[Any, ...]:
        return ("gaussian_noise", self.field, self.sigma)


class TokenMask(Transform):
    """Masked-LM masking of an integer field: each token is selected with
    probability prob; a selected one becomes mask_value (with probability
    1 - random_prob - keep_prob), a random token in [0, vocab) (random_prob)
    or stays (keep_prob). vocab is required when random_prob > 0."""

    def __init__(self, field: str, mask_value: int, prob: float = 0.15, random_prob: float = 0.1,
                 keep_prob: float = 0.1, vocab: int = 0) -> None:
        self.field = _name(field)
        self.mask_value = _int("mask_value", mask_value, -2**63)
        self.prob = _real("prob", prob)
        self.random_prob = _real("random_prob", random_prob)
        self.keep_prob = _real("keep_prob", keep_prob)
        self.vocab = _int("vocab", vocab, 0)

    def spec(self) -> Tuple[Any, ...]:
        return ("token_mask", self.field, self.prob, self.mask_value, self.random_prob,
                self.keep_prob, self.vocab)


class TokenDrop(Transform):
    """Every time step of a sequence field is removed with probability prob."""

    def __init__(self, field: str, prob: float) -> None:
        self.field, self.prob = _name(field), _real("prob", prob)

    def spec(self) -> Tuple[Any, ...]:
        return ("token_drop", self.field, self.prob)


class Standardize(Transform):
    """Per channel (element of a row): y = (x - mean[c]) / std[c], as f32 (the
    field's output dtype becomes f32). Give mean and std (one value per
    channel), or neither: then they are read from the store's attributes
    "<prefix>.mean" / "<prefix>.std" (prefix None: "ss.norm.<field>", what
    the C library's ss_standardize_save() writes) when the loader opens."""

    def __init__(self, field: str, mean: Optional[npt.ArrayLike] = None,
                 std: Optional[npt.ArrayLike] = None, prefix: Optional[str] = None) -> None:
        self.field = _name(field)
        if (mean is None) != (std is None):
            raise ValueError("Standardize: give both mean and std, or neither (attributes)")
        if prefix is not None and (mean is not None or not isinstance(prefix, str)):
            raise ValueError("Standardize: prefix (a str) is for statistics read from attributes")
        self.prefix = prefix
        self.mean = self.std = None
        if mean is not None:
            self.mean = np.ascontiguousarray(np.atleast_1d(mean), dtype=np.float64)
            self.std = np.ascontiguousarray(np.atleast_1d(std), dtype=np.float64)
            if self.mean.ndim != 1 or self.mean.shape != self.std.shape:
                raise ValueError("Standardize: mean and std are 1-D of the same length, not "
                                 "%s and %s" % (self.mean.shape, self.std.shape))

    def spec(self) -> Tuple[Any, ...]:
        if self.mean is None:
            return ("standardize_attr", self.field, self.prefix)
        return ("standardize", self.field, self.mean.tobytes(), self.std.tobytes())


class LabelMap(Transform):
    """Every element x of an integer field becomes table[x] (saturated to the
    field's dtype); an x outside [0, len(table)) fails the batch."""

    def __init__(self, field: str, table: Sequence[int] | npt.ArrayLike) -> None:
        self.field = _name(field)
        t = np.asarray(table)
        if t.ndim != 1 or (t.size and not np.issubdtype(t.dtype, np.integer)):
            raise TypeError("LabelMap: table is a 1-D sequence of ints")
        self.table = np.ascontiguousarray(t, dtype=np.int64)

    def spec(self) -> Tuple[Any, ...]:
        return ("label_map", self.field, self.table.tobytes())


def _specs(transforms):
    """Loader(transforms=) -> the list of spec tuples (None for none)."""
    if transforms is None:
        return None
    if isinstance(transforms, Transform) or not isinstance(transforms, (list, tuple)):
        raise TypeError("transforms is a list of seqstore.transforms objects, not %r"
                        % (transforms,))
    for t in transforms:
        if not isinstance(t, Transform):
            raise TypeError("transforms: %r is not a seqstore.transforms object" % (t,))
    return [t.spec() for t in transforms]


def _declared_dtypes(transforms):
    """Output dtypes the transforms declare (Standardize -> f32), by field."""
    return {t.field: "f32" for t in (transforms or ()) if isinstance(t, Standardize)}
