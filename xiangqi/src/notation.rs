//! Move notation: ICCS, Chinese and WXF.
