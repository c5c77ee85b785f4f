"""simt-reduce: row programs and column programs.

* ``rowwise``: a kernel whose loops run over the same rows, reducing or
  mapping along the innermost dim, as one launch with a row per block or
  warp (dnn-reduce-rows);
* ``rowsplit``: a row too long for one block spread over a thread-block
  cluster; ``rowmerge``: two reductions of a split row in one exchange;
* ``rowcolumns``: a row program that also folds its rows into column sums
  (a norm backward's dx with its dscale and dbias, dnn-reduce-rows-columns);
* ``colwise``: reductions over the leading dims that keep the innermost
  (dnn-reduce-columns): ``build`` and the rows launch; the kernel read in
  ``colwise_program``, what both launches share in ``colwise_emitter``, the
  partials summed in ``colwise_finish`` (also rowcolumns' second launch).
"""
