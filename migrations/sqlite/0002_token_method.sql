-- How each memory's `tokens` was counted: `exact:o200k_base`, or the bytes/4
-- estimate (what every memory stored before this column got).
ALTER TABLE memories ADD COLUMN token_method TEXT NOT NULL DEFAULT 'estimate:bytes/4';
