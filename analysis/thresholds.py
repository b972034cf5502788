"""From how many reviews a record's figures are published: constants only, so that the pages read them without
loading the model."""

# "Most praised", "most criticised" and "most named" are said only of a record with at least MIN_COUNT such
# mentions and MARGIN more than the next one; otherwise the lead is too small to publish. The pages show a
# person's or a service's share of positive reviews and score only from MIN_COUNT reviews on.
MIN_COUNT = 3
MARGIN = 2
