"""Column transformers and transformations: value → coordinate in [0, 1] (spec §4, §1.2).

A :class:`Transformer` is the per-column *recipe* stored in a revision
(``"id:linear"``); given statistics it makes a :class:`Transformation`, the *parameters*
(min/max, null value, quantiles) that map values to coordinates. Both are serialized into the
revision JSON with a ``className`` discriminator (:func:`transformer_to_json`,
:func:`transformation_from_json`, …).

Value conventions for :meth:`Transformation.transform` and
:meth:`Transformer.make_transformation`:

* Integer/Long columns: ``int``; Double/Float columns: ``float``; Decimal: ``Decimal`` or
  ``float`` (converted to a double, as the reference stores decimal bounds as doubles);
* Timestamp columns: ``int`` epoch **milliseconds** (``datetime`` values are accepted and
  converted with ``floor(micros / 1000)`` like the writer's ``Timestamp.getTime``);
* Date columns: ``int`` epoch milliseconds of UTC midnight, i.e. ``days * 86_400_000``
  (``date`` values are accepted and converted that way);
* String columns: ``str``; ``None`` is a null.

The package has one module per concept: :mod:`.datatypes` (data types, value coercion, Java
order), :mod:`.base` (the base classes and statistics), one module per family
(:mod:`.linear`, :mod:`.hash`, :mod:`.quantiles`, :mod:`.histogram`, :mod:`.empty`) and
:mod:`.codec` (the JSON). Import the names from here.
"""

from __future__ import annotations

from qbeast_connect.model._json import jackson_tree_text
from qbeast_connect.model.transformation.base import (
    CLASS_NAME_PREFIX,
    ColumnStats,
    Transformation,
    Transformer,
)
from qbeast_connect.model.transformation.codec import (
    transformation_from_json,
    transformation_to_json,
    transformer_from_json,
    transformer_to_json,
)
from qbeast_connect.model.transformation.datatypes import QDataType
from qbeast_connect.model.transformation.empty import EmptyTransformation, EmptyTransformer
from qbeast_connect.model.transformation.hash import HashTransformation, HashTransformer
from qbeast_connect.model.transformation.histogram import (
    DEFAULT_HISTOGRAM,
    StringHistogramTransformation,
    StringHistogramTransformer,
)
from qbeast_connect.model.transformation.linear import (
    IdentityTransformation,
    LinearTransformation,
    LinearTransformer,
)
from qbeast_connect.model.transformation.quantiles import (
    CDFNumericQuantilesTransformation,
    CDFNumericQuantilesTransformer,
    CDFStringQuantilesTransformation,
    CDFStringQuantilesTransformer,
)

__all__ = [
    "CLASS_NAME_PREFIX",
    "DEFAULT_HISTOGRAM",
    "CDFNumericQuantilesTransformation",
    "CDFNumericQuantilesTransformer",
    "CDFStringQuantilesTransformation",
    "CDFStringQuantilesTransformer",
    "ColumnStats",
    "EmptyTransformation",
    "EmptyTransformer",
    "HashTransformation",
    "HashTransformer",
    "IdentityTransformation",
    "LinearTransformation",
    "LinearTransformer",
    "QDataType",
    "StringHistogramTransformation",
    "StringHistogramTransformer",
    "Transformation",
    "Transformer",
    "jackson_tree_text",
    "transformation_from_json",
    "transformation_to_json",
    "transformer_from_json",
    "transformer_to_json",
]
