"""`reviewsd analyze`: insights.json derived from reviews.json and business.toml, explainably."""
