"""What an audit produces: typed results and the files that carry them.

Lives here: the frozen records of an audit (:mod:`.result`, :mod:`.attack_result`,
:mod:`.slice_result`), and the numbers the reports draw (:mod:`.figures`,
:mod:`.landscape_data`); the files are written through :mod:`epsstar.plumbing.files.staging`.

May import: :mod:`epsstar.audit.data`, :mod:`epsstar.audit.model`, :mod:`epsstar.statistics`.
"""
