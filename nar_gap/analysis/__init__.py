"""How far models are from each other: faithfulness, statistics, loss landscapes."""
