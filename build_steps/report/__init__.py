"""The end of a run's products as functions of its record: the record (``record``), the JSON
report, the review page's document and the summary lines (``document``), the wheel's place in
dist/ or dist/rejected/ (``placement``), and the HTML review page itself (``review_page``, its
jinja2 template in ``templates/``). Plain code, no pytest: harness.plugins.finish's rows call them.
"""
