"""The validity ladder of the metrics (``ruwikibench check-metrics``): planted outputs of known order
(ladder.py), scored and checked (check.py)."""
