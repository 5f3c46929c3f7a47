"""Streaming reader for the tabular records an audit runs a model on.

A table is read from CSV, Parquet, NPZ or NPY in batches of a fixed number of
rows, so memory is bounded by the batch size rather than by the file: a
population file of ten million rows streams in a few hundred MiB.

Columns are chosen by name, and a file must name each column once (at most
:data:`~.shared.MAX_COLUMNS` of them). Feature columns keep their types (:class:`Features`):
numbers and booleans as stored (int64, float32, float64, bool; a text column whose every
value is a number becomes float64), other text as an object array of ``str`` (for models
such as a scikit-learn pipeline that encodes categories itself), and an array of records
of several dimensions (an image, ``(N, 1, 8, 8)`` in an NPZ) as one tensor column. Numbers
must be finite and, when the model's input type is given, within its range (1e39 is
infinite in float32); text and labels must be present in every row. For a model that
handles missing values itself (``missing=True``), a missing feature value is kept as NaN
instead (infinity is still refused). Problems are reported
in one line naming the file, the column, the 0-based data row and the bad value.

Conventions per format:

* **CSV**: UTF-8 text (a byte-order mark is dropped); the first line is the
  header. Fields are separated by commas unless ``separator`` says otherwise (``";"``,
  what spreadsheets write where the decimal mark is a comma); a file read with commas
  whose header is one field holding ``;``, a tab or ``|`` is refused, naming the
  separator option (:data:`~.csv_files.SEPARATOR_OPTION`), rather than read as one column. A first
  column whose header field is empty is the pandas index ``DataFrame.to_csv(path)``
  writes (row labels, not data) and is not a column of the table, as in Parquet.
  Blank lines are skipped. Every row has as many fields as the header: a
  row with more or fewer is refused, naming its line, so that an unquoted decimal
  comma ("1,5") cannot shift the values of a row. The number of rows is unknown
  without reading the file (:attr:`TableSchema.n_rows` is ``None``;
  :func:`count_rows` streams through it).
* **Parquet**: top-level columns, except those that hold a pandas index (the file's
  pandas metadata names them); the row count comes from the footer.
* **NPZ**, either layout:

  - one 1-D array per column, all of one length; the array names are the
    column names, in archive order;
  - a 2-D array ``X`` whose columns are named by an optional 1-D string array
    ``columns`` (else ``"x0"``, ``"x1"``, ...), followed by every other 1-D
    array of the same length, such as ``y``.

* **NPY**: one 2-D numeric array; its columns are named ``"0"``, ``"1"``, ...,
  so the label column is given by its index as a string (``label_column="10"``).

An array whose header announces more bytes than its file holds is refused before
anything is read. NPY files and NPZ members are never loaded whole: uncompressed arrays
(``np.save``, ``np.savez``) are read by offset, in C or Fortran order;
compressed ones (``np.savez_compressed``) are decompressed as they are read.
A compressed 2-D array in Fortran order (what ``DataFrame.to_numpy()`` usually
returns) is decompressed once per column, so it reads about ``d / 2`` times
slower than the same array in C order; store it uncompressed or in C order.

Labels are returned as read: int64, float64, bool or an object array of ``str``.
:func:`read_table` (the trainer's reader) returns the features as one numeric matrix
(float32 when every column is stored as float32, else float64) and refuses text.

A module per format reads it (:mod:`.csv_files`, :mod:`.parquet_files`, :mod:`.array_files`)
and :mod:`.formats` picks it by the file's suffix; :mod:`.values` checks what they read,
:mod:`.batches` streams it, :mod:`.columns` reads one column and :mod:`.labels` matches labels
to a model's classes. The names below are its Python API (docs/data.md).
"""

from epsstar.audit.data.tables.batches import Table, iter_batches, read_table
from epsstar.audit.data.tables.columns import read_column
from epsstar.audit.data.tables.formats import count_rows, read_schema
from epsstar.audit.data.tables.labels import LabelMap, label_map_for
from epsstar.audit.data.tables.shared import Batch, TableSchema

# The rest is imported from the module that holds it.
__all__ = [
    "Batch",
    "LabelMap",
    "Table",
    "TableSchema",
    "count_rows",
    "iter_batches",
    "label_map_for",
    "read_column",
    "read_schema",
    "read_table",
]
