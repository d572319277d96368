"""What a word is to search, on both engines: SQLite FTS5's unicode61 tokenizer with
remove_diacritics 2 (migrations 0002, 0007), written down as tables.

FTS5 splits text at the SEPARATORS and folds each character of a word by FOLD_FROM and
FOLD_TO (case, and accents: "Café" is the word "cafe"; "src/app.py" is "src", "app", "py").
PostgreSQL's full-text index reads text by the same tables (migration 0020), and so does the
query parser (search.parse_query), so a query finds the same entries on both engines.

The tables are SQLite's own, read back from its tokenizer by probe(); tests/test_tokens.py
compares them with the SQLite in use. To write them again: `python -m sessionviewer.tokens`.
"""

from __future__ import annotations

import functools
import re
import sqlite3
import sys
from collections.abc import Collection

# The characters FTS5 splits words at, as one character class in the syntax Python's re and
# PostgreSQL's regular expressions share (\uXXXX, \UXXXXXXXX). NUL is left out: no text holds it.
SEPARATORS = r"[\u0001-\u002f\u003a-\u0040\u005b-\u0060\u007b-\u00a9\u00ab-\u00b1\u00b4\u00b6-\u00b8\u00bb\u00bf\u00d7\u00f7\u02c2-\u02c5\u02d2-\u02df\u02e5-\u02eb\u02ed\u02ef-\u02ff\u0305\u030d-\u030e\u0310\u0312-\u031a\u031c-\u0322\u0329-\u032c\u032f\u0332-\u036f\u0375\u037e\u0384-\u0385\u0387\u03f6\u0482-\u0489\u055a-\u055f\u0589-\u058a\u058f\u0591-\u05c7\u05f3-\u05f4\u0600-\u0604\u0606-\u061b\u061e-\u061f\u064b-\u065f\u066a-\u066d\u0670\u06d4\u06d6-\u06e4\u06e7-\u06ed\u06fd-\u06fe\u0700-\u070d\u070f\u0711\u0730-\u074a\u07a6-\u07b0\u07eb-\u07f3\u07f6-\u07f9\u0816-\u0819\u081b-\u0823\u0825-\u0827\u0829-\u082d\u0830-\u083e\u0859-\u085b\u085e\u08e4-\u08fe\u0900-\u0903\u093a-\u093c\u093e-\u094f\u0951-\u0957\u0962-\u0965\u0970\u0981-\u0983\u09bc\u09be-\u09c4\u09c7-\u09c8\u09cb-\u09cd\u09d7\u09e2-\u09e3\u09f2-\u09f3\u09fa-\u09fb\u0a01-\u0a03\u0a3c\u0a3e-\u0a42\u0a47-\u0a48\u0a4b-\u0a4d\u0a51\u0a70-\u0a71\u0a75\u0a81-\u0a83\u0abc\u0abe-\u0ac5\u0ac7-\u0ac9\u0acb-\u0acd\u0ae2-\u0ae3\u0af0-\u0af1\u0b01-\u0b03\u0b3c\u0b3e-\u0b44\u0b47-\u0b48\u0b4b-\u0b4d\u0b56-\u0b57\u0b62-\u0b63\u0b70\u0b82\u0bbe-\u0bc2\u0bc6-\u0bc8\u0bca-\u0bcd\u0bd7\u0bf3-\u0bfa\u0c01-\u0c03\u0c3e-\u0c44\u0c46-\u0c48\u0c4a-\u0c4d\u0c55-\u0c56\u0c62-\u0c63\u0c7f\u0c82-\u0c83\u0cbc\u0cbe-\u0cc4\u0cc6-\u0cc8\u0cca-\u0ccd\u0cd5-\u0cd6\u0ce2-\u0ce3\u0d02-\u0d03\u0d3e-\u0d44\u0d46-\u0d48\u0d4a-\u0d4d\u0d57\u0d62-\u0d63\u0d79\u0d82-\u0d83\u0dca\u0dcf-\u0dd4\u0dd6\u0dd8-\u0ddf\u0df2-\u0df4\u0e31\u0e34-\u0e3a\u0e3f\u0e47-\u0e4f\u0e5a-\u0e5b\u0eb1\u0eb4-\u0eb9\u0ebb-\u0ebc\u0ec8-\u0ecd\u0f01-\u0f1f\u0f34-\u0f3f\u0f71-\u0f87\u0f8d-\u0f97\u0f99-\u0fbc\u0fbe-\u0fcc\u0fce-\u0fda\u102b-\u103e\u104a-\u104f\u1056-\u1059\u105e-\u1060\u1062-\u1064\u1067-\u106d\u1071-\u1074\u1082-\u108d\u108f\u109a-\u109f\u10fb\u135d-\u1368\u1390-\u1399\u1400\u166d-\u166e\u1680\u169b-\u169c\u16eb-\u16ed\u1712-\u1714\u1732-\u1736\u1752-\u1753\u1772-\u1773\u17b4-\u17d6\u17d8-\u17db\u17dd\u1800-\u180e\u18a9\u1920-\u192b\u1930-\u193b\u1940\u1944-\u1945\u19b0-\u19c0\u19c8-\u19c9\u19de-\u19ff\u1a17-\u1a1b\u1a1e-\u1a1f\u1a55-\u1a5e\u1a60-\u1a7c\u1a7f\u1aa0-\u1aa6\u1aa8-\u1aad\u1b00-\u1b04\u1b34-\u1b44\u1b5a-\u1b7c\u1b80-\u1b82\u1ba1-\u1bad\u1be6-\u1bf3\u1bfc-\u1bff\u1c24-\u1c37\u1c3b-\u1c3f\u1c7e-\u1c7f\u1cc0-\u1cc7\u1cd0-\u1ce8\u1ced\u1cf2-\u1cf4\u1dc0-\u1de6\u1dfc-\u1dff\u1fbd\u1fbf-\u1fc1\u1fcd-\u1fcf\u1fdd-\u1fdf\u1fed-\u1fef\u1ffd-\u1ffe\u2000-\u2064\u206a-\u206f\u207a-\u207e\u208a-\u208e\u20a0-\u20b9\u20d0-\u20f0\u2100-\u2101\u2103-\u2106\u2108-\u2109\u2114\u2116-\u2118\u211e-\u2123\u2125\u2127\u2129\u212e\u213a-\u213b\u2140-\u2144\u214a-\u214d\u214f\u2190-\u23f3\u2400-\u2426\u2440-\u244a\u249c-\u24e9\u2500-\u26ff\u2701-\u2775\u2794-\u2b4c\u2b50-\u2b59\u2ce5-\u2cea\u2cef-\u2cf1\u2cf9-\u2cfc\u2cfe-\u2cff\u2d70\u2d7f\u2de0-\u2e2e\u2e30-\u2e3b\u2e80-\u2e99\u2e9b-\u2ef3\u2f00-\u2fd5\u2ff0-\u2ffb\u3000-\u3004\u3008-\u3020\u302a-\u3030\u3036-\u3037\u303d-\u303f\u3099-\u309c\u30a0\u30fb\u3190-\u3191\u3196-\u319f\u31c0-\u31e3\u3200-\u321e\u322a-\u3247\u3250\u3260-\u327f\u328a-\u32b0\u32c0-\u32fe\u3300-\u33ff\u4dc0-\u4dff\ua490-\ua4c6\ua4fe-\ua4ff\ua60d-\ua60f\ua66f-\ua67e\ua69f\ua6f0-\ua6f7\ua700-\ua716\ua720-\ua721\ua789-\ua78a\ua802\ua806\ua80b\ua823-\ua82b\ua836-\ua839\ua874-\ua877\ua880-\ua881\ua8b4-\ua8c4\ua8ce-\ua8cf\ua8e0-\ua8f1\ua8f8-\ua8fa\ua926-\ua92f\ua947-\ua953\ua95f\ua980-\ua983\ua9b3-\ua9cd\ua9de-\ua9df\uaa29-\uaa36\uaa43\uaa4c-\uaa4d\uaa5c-\uaa5f\uaa77-\uaa79\uaa7b\uaab0\uaab2-\uaab4\uaab7-\uaab8\uaabe-\uaabf\uaac1\uaade-\uaadf\uaaeb-\uaaf1\uaaf5-\uaaf6\uabe3-\uabed\ufb1e\ufb29\ufbb2-\ufbc1\ufd3e-\ufd3f\ufdfc-\ufdfd\ufe00-\ufe19\ufe20-\ufe26\ufe30-\ufe52\ufe54-\ufe66\ufe68-\ufe6b\ufeff\uff01-\uff0f\uff1a-\uff20\uff3b-\uff40\uff5b-\uff65\uffe0-\uffe6\uffe8-\uffee\ufff9-\uffff\U00010100-\U00010102\U00010137-\U0001013f\U00010179-\U00010189\U00010190-\U0001019b\U000101d0-\U000101fd\U0001039f\U000103d0\U00010857\U0001091f\U0001093f\U00010a01-\U00010a03\U00010a05-\U00010a06\U00010a0c-\U00010a0f\U00010a38-\U00010a3a\U00010a3f\U00010a50-\U00010a58\U00010a7f\U00010b39-\U00010b3f\U00011000-\U00011002\U00011038-\U0001104d\U00011080-\U00011082\U000110b0-\U000110c1\U00011100-\U00011102\U00011127-\U00011134\U00011140-\U00011143\U00011180-\U00011182\U000111b3-\U000111c0\U000111c5-\U000111c8\U000116ab-\U000116b7\U00012470-\U00012473\U00016f51-\U00016f7e\U00016f8f-\U00016f92\U0001d000-\U0001d0f5\U0001d100-\U0001d126\U0001d129-\U0001d1dd\U0001d200-\U0001d245\U0001d300-\U0001d356\U0001d6c1\U0001d6db\U0001d6fb\U0001d715\U0001d735\U0001d74f\U0001d76f\U0001d789\U0001d7a9\U0001d7c3\U0001eef0-\U0001eef1\U0001f000-\U0001f02b\U0001f030-\U0001f093\U0001f0a0-\U0001f0ae\U0001f0b1-\U0001f0be\U0001f0c1-\U0001f0cf\U0001f0d1-\U0001f0df\U0001f110-\U0001f12e\U0001f130-\U0001f16b\U0001f170-\U0001f19a\U0001f1e6-\U0001f202\U0001f210-\U0001f23a\U0001f240-\U0001f248\U0001f250-\U0001f251\U0001f300-\U0001f320\U0001f330-\U0001f335\U0001f337-\U0001f37c\U0001f380-\U0001f393\U0001f3a0-\U0001f3c4\U0001f3c6-\U0001f3ca\U0001f3e0-\U0001f3f0\U0001f400-\U0001f43e\U0001f440\U0001f442-\U0001f4f7\U0001f4f9-\U0001f4fc\U0001f500-\U0001f53d\U0001f540-\U0001f543\U0001f550-\U0001f567\U0001f5fb-\U0001f640\U0001f645-\U0001f64f\U0001f680-\U0001f6c5\U0001f700-\U0001f773\U000e0001\U000e0020-\U000e007f\U000e0100-\U000e01ef]"
# Each character FTS5 folds, and into what: the character at the same place in FOLD_TO, or
# none past its end (a combining accent), as PostgreSQL's translate() reads them.
FOLD_FROM = "ABCDEFGHIJKLMNOPQRSTUVWXYZ\u00b5\u00c0\u00c1\u00c2\u00c3\u00c4\u00c5\u00c6\u00c7\u00c8\u00c9\u00ca\u00cb\u00cc\u00cd\u00ce\u00cf\u00d0\u00d1\u00d2\u00d3\u00d4\u00d5\u00d6\u00d8\u00d9\u00da\u00db\u00dc\u00dd\u00de\u00e0\u00e1\u00e2\u00e3\u00e4\u00e5\u00e7\u00e8\u00e9\u00ea\u00eb\u00ec\u00ed\u00ee\u00ef\u00f1\u00f2\u00f3\u00f4\u00f5\u00f6\u00f9\u00fa\u00fb\u00fc\u00fd\u00ff\u0100\u0101\u0102\u0103\u0104\u0105\u0106\u0107\u0108\u0109\u010a\u010b\u010c\u010d\u010e\u010f\u0110\u0112\u0113\u0114\u0115\u0116\u0117\u0118\u0119\u011a\u011b\u011c\u011d\u011e\u011f\u0120\u0121\u0122\u0123\u0124\u0125\u0126\u0128\u0129\u012a\u012b\u012c\u012d\u012e\u012f\u0130\u0132\u0134\u0135\u0136\u0137\u0139\u013a\u013b\u013c\u013d\u013e\u013f\u0141\u0143\u0144\u0145\u0146\u0147\u0148\u014a\u014c\u014d\u014e\u014f\u0150\u0151\u0152\u0154\u0155\u0156\u0157\u0158\u0159\u015a\u015b\u015c\u015d\u015e\u015f\u0160\u0161\u0162\u0163\u0164\u0165\u0166\u0168\u0169\u016a\u016b\u016c\u016d\u016e\u016f\u0170\u0171\u0172\u0173\u0174\u0175\u0176\u0177\u0178\u0179\u017a\u017b\u017c\u017d\u017e\u017f\u0181\u0182\u0184\u0186\u0187\u0189\u018a\u018b\u018e\u018f\u0190\u0191\u0193\u0194\u0196\u0197\u0198\u019c\u019d\u019f\u01a0\u01a1\u01a2\u01a4\u01a6\u01a7\u01a9\u01ac\u01ae\u01af\u01b0\u01b1\u01b2\u01b3\u01b5\u01b7\u01b8\u01bc\u01c4\u01c5\u01c7\u01c8\u01ca\u01cb\u01cd\u01ce\u01cf\u01d0\u01d1\u01d2\u01d3\u01d4\u01d5\u01d6\u01d7\u01d8\u01d9\u01da\u01db\u01dc\u01de\u01df\u01e0\u01e2\u01e4\u01e6\u01e7\u01e8\u01e9\u01ea\u01eb\u01ec\u01ed\u01ee\u01f0\u01f1\u01f2\u01f4\u01f5\u01f6\u01f7\u01f8\u01f9\u01fa\u01fb\u01fc\u01fe\u0200\u0201\u0202\u0203\u0204\u0205\u0206\u0207\u0208\u0209\u020a\u020b\u020c\u020d\u020e\u020f\u0210\u0211\u0212\u0213\u0214\u0215\u0216\u0217\u0218\u0219\u021a\u021b\u021c\u021e\u021f\u0220\u0222\u0224\u0226\u0227\u0228\u0229\u022a\u022b\u022c\u022d\u022e\u022f\u0230\u0231\u0232\u0233\u023a\u023b\u023d\u023e\u0241\u0243\u0244\u0245\u0246\u0248\u024a\u024c\u024e\u0370\u0372\u0376\u0386\u0388\u0389\u038a\u038c\u038e\u038f\u0391\u0392\u0393\u0394\u0395\u0396\u0397\u0398\u0399\u039a\u039b\u039c\u039d\u039e\u039f\u03a0\u03a1\u03a3\u03a4\u03a5\u03a6\u03a7\u03a8\u03a9\u03aa\u03ab\u03c2\u03cf\u03d0\u03d1\u03d5\u03d6\u03d8\u03da\u03dc\u03de\u03e0\u03e2\u03e4\u03e6\u03e8\u03ea\u03ec\u03ee\u03f0\u03f1\u03f4\u03f5\u03f7\u03f9\u03fa\u03fd\u03fe\u03ff\u0400\u0401\u0402\u0403\u0404\u0405\u0406\u0407\u0408\u0409\u040a\u040b\u040c\u040d\u040e\u040f\u0410\u0411\u0412\u0413\u0414\u0415\u0416\u0417\u0418\u0419\u041a\u041b\u041c\u041d\u041e\u041f\u0420\u0421\u0422\u0423\u0424\u0425\u0426\u0427\u0428\u0429\u042a\u042b\u042c\u042d\u042e\u042f\u0460\u0462\u0464\u0466\u0468\u046a\u046c\u046e\u0470\u0472\u0474\u0476\u0478\u047a\u047c\u047e\u0480\u048a\u048c\u048e\u0490\u0492\u0494\u0496\u0498\u049a\u049c\u049e\u04a0\u04a2\u04a4\u04a6\u04a8\u04aa\u04ac\u04ae\u04b0\u04b2\u04b4\u04b6\u04b8\u04ba\u04bc\u04be\u04c0\u04c1\u04c3\u04c5\u04c7\u04c9\u04cb\u04cd\u04d0\u04d2\u04d4\u04d6\u04d8\u04da\u04dc\u04de\u04e0\u04e2\u04e4\u04e6\u04e8\u04ea\u04ec\u04ee\u04f0\u04f2\u04f4\u04f6\u04f8\u04fa\u04fc\u04fe\u0500\u0502\u0504\u0506\u0508\u050a\u050c\u050e\u0510\u0512\u0514\u0516\u0518\u051a\u051c\u051e\u0520\u0522\u0524\u0526\u0531\u0532\u0533\u0534\u0535\u0536\u0537\u0538\u0539\u053a\u053b\u053c\u053d\u053e\u053f\u0540\u0541\u0542\u0543\u0544\u0545\u0546\u0547\u0548\u0549\u054a\u054b\u054c\u054d\u054e\u054f\u0550\u0551\u0552\u0553\u0554\u0555\u0556\u10a0\u10a1\u10a2\u10a3\u10a4\u10a5\u10a6\u10a7\u10a8\u10a9\u10aa\u10ab\u10ac\u10ad\u10ae\u10af\u10b0\u10b1\u10b2\u10b3\u10b4\u10b5\u10b6\u10b7\u10b8\u10b9\u10ba\u10bb\u10bc\u10bd\u10be\u10bf\u10c0\u10c1\u10c2\u10c3\u10c4\u10c5\u10c7\u10cd\u1e00\u1e01\u1e02\u1e03\u1e04\u1e05\u1e06\u1e07\u1e08\u1e09\u1e0a\u1e0b\u1e0c\u1e0d\u1e0e\u1e0f\u1e10\u1e11\u1e12\u1e13\u1e14\u1e15\u1e16\u1e17\u1e18\u1e19\u1e1a\u1e1b\u1e1c\u1e1d\u1e1e\u1e1f\u1e20\u1e21\u1e22\u1e23\u1e24\u1e25\u1e26\u1e27\u1e28\u1e29\u1e2a\u1e2b\u1e2c\u1e2d\u1e2e\u1e2f\u1e30\u1e31\u1e32\u1e33\u1e34\u1e35\u1e36\u1e37\u1e38\u1e39\u1e3a\u1e3b\u1e3c\u1e3d\u1e3e\u1e3f\u1e40\u1e41\u1e42\u1e43\u1e44\u1e45\u1e46\u1e47\u1e48\u1e49\u1e4a\u1e4b\u1e4c\u1e4d\u1e4e\u1e4f\u1e50\u1e51\u1e52\u1e53\u1e54\u1e55\u1e56\u1e57\u1e58\u1e59\u1e5a\u1e5b\u1e5c\u1e5d\u1e5e\u1e5f\u1e60\u1e61\u1e62\u1e63\u1e64\u1e65\u1e66\u1e67\u1e68\u1e69\u1e6a\u1e6b\u1e6c\u1e6d\u1e6e\u1e6f\u1e70\u1e71\u1e72\u1e73\u1e74\u1e75\u1e76\u1e77\u1e78\u1e79\u1e7a\u1e7b\u1e7c\u1e7d\u1e7e\u1e7f\u1e80\u1e81\u1e82\u1e83\u1e84\u1e85\u1e86\u1e87\u1e88\u1e89\u1e8a\u1e8b\u1e8c\u1e8d\u1e8e\u1e8f\u1e90\u1e91\u1e92\u1e93\u1e94\u1e95\u1e96\u1e97\u1e98\u1e99\u1e9b\u1e9e\u1ea0\u1ea1\u1ea2\u1ea3\u1ea4\u1ea5\u1ea6\u1ea7\u1ea8\u1ea9\u1eaa\u1eab\u1eac\u1ead\u1eae\u1eaf\u1eb0\u1eb1\u1eb2\u1eb3\u1eb4\u1eb5\u1eb6\u1eb7\u1eb8\u1eb9\u1eba\u1ebb\u1ebc\u1ebd\u1ebe\u1ebf\u1ec0\u1ec1\u1ec2\u1ec3\u1ec4\u1ec5\u1ec6\u1ec7\u1ec8\u1ec9\u1eca\u1ecb\u1ecc\u1ecd\u1ece\u1ecf\u1ed0\u1ed1\u1ed2\u1ed3\u1ed4\u1ed5\u1ed6\u1ed7\u1ed8\u1ed9\u1eda\u1edb\u1edc\u1edd\u1ede\u1edf\u1ee0\u1ee1\u1ee2\u1ee3\u1ee4\u1ee5\u1ee6\u1ee7\u1ee8\u1ee9\u1eea\u1eeb\u1eec\u1eed\u1eee\u1eef\u1ef0\u1ef1\u1ef2\u1ef3\u1ef4\u1ef5\u1ef6\u1ef7\u1ef8\u1ef9\u1efa\u1efc\u1efe\u1f08\u1f09\u1f0a\u1f0b\u1f0c\u1f0d\u1f0e\u1f0f\u1f18\u1f19\u1f1a\u1f1b\u1f1c\u1f1d\u1f28\u1f29\u1f2a\u1f2b\u1f2c\u1f2d\u1f2e\u1f2f\u1f38\u1f39\u1f3a\u1f3b\u1f3c\u1f3d\u1f3e\u1f3f\u1f48\u1f49\u1f4a\u1f4b\u1f4c\u1f4d\u1f59\u1f5b\u1f5d\u1f5f\u1f68\u1f69\u1f6a\u1f6b\u1f6c\u1f6d\u1f6e\u1f6f\u1f88\u1f89\u1f8a\u1f8b\u1f8c\u1f8d\u1f8e\u1f8f\u1f98\u1f99\u1f9a\u1f9b\u1f9c\u1f9d\u1f9e\u1f9f\u1fa8\u1fa9\u1faa\u1fab\u1fac\u1fad\u1fae\u1faf\u1fb8\u1fb9\u1fba\u1fbb\u1fbc\u1fbe\u1fc8\u1fc9\u1fca\u1fcb\u1fcc\u1fd8\u1fd9\u1fda\u1fdb\u1fe8\u1fe9\u1fea\u1feb\u1fec\u1ff8\u1ff9\u1ffa\u1ffb\u1ffc\u2126\u212a\u212b\u2132\u2160\u2161\u2162\u2163\u2164\u2165\u2166\u2167\u2168\u2169\u216a\u216b\u216c\u216d\u216e\u216f\u2183\u2c00\u2c01\u2c02\u2c03\u2c04\u2c05\u2c06\u2c07\u2c08\u2c09\u2c0a\u2c0b\u2c0c\u2c0d\u2c0e\u2c0f\u2c10\u2c11\u2c12\u2c13\u2c14\u2c15\u2c16\u2c17\u2c18\u2c19\u2c1a\u2c1b\u2c1c\u2c1d\u2c1e\u2c1f\u2c20\u2c21\u2c22\u2c23\u2c24\u2c25\u2c26\u2c27\u2c28\u2c29\u2c2a\u2c2b\u2c2c\u2c2d\u2c2e\u2c60\u2c62\u2c63\u2c64\u2c67\u2c69\u2c6b\u2c6d\u2c6e\u2c6f\u2c70\u2c72\u2c75\u2c7e\u2c7f\u2c80\u2c82\u2c84\u2c86\u2c88\u2c8a\u2c8c\u2c8e\u2c90\u2c92\u2c94\u2c96\u2c98\u2c9a\u2c9c\u2c9e\u2ca0\u2ca2\u2ca4\u2ca6\u2ca8\u2caa\u2cac\u2cae\u2cb0\u2cb2\u2cb4\u2cb6\u2cb8\u2cba\u2cbc\u2cbe\u2cc0\u2cc2\u2cc4\u2cc6\u2cc8\u2cca\u2ccc\u2cce\u2cd0\u2cd2\u2cd4\u2cd6\u2cd8\u2cda\u2cdc\u2cde\u2ce0\u2ce2\u2ceb\u2ced\u2cf2\ua640\ua642\ua644\ua646\ua648\ua64a\ua64c\ua64e\ua650\ua652\ua654\ua656\ua658\ua65a\ua65c\ua65e\ua660\ua662\ua664\ua666\ua668\ua66a\ua66c\ua680\ua682\ua684\ua686\ua688\ua68a\ua68c\ua68e\ua690\ua692\ua694\ua696\ua722\ua724\ua726\ua728\ua72a\ua72c\ua72e\ua732\ua734\ua736\ua738\ua73a\ua73c\ua73e\ua740\ua742\ua744\ua746\ua748\ua74a\ua74c\ua74e\ua750\ua752\ua754\ua756\ua758\ua75a\ua75c\ua75e\ua760\ua762\ua764\ua766\ua768\ua76a\ua76c\ua76e\ua779\ua77b\ua77d\ua77e\ua780\ua782\ua784\ua786\ua78b\ua78d\ua790\ua792\ua7a0\ua7a2\ua7a4\ua7a6\ua7a8\ua7aa\uff21\uff22\uff23\uff24\uff25\uff26\uff27\uff28\uff29\uff2a\uff2b\uff2c\uff2d\uff2e\uff2f\uff30\uff31\uff32\uff33\uff34\uff35\uff36\uff37\uff38\uff39\uff3a\U00010400\U00010401\U00010402\U00010403\U00010404\U00010405\U00010406\U00010407\U00010408\U00010409\U0001040a\U0001040b\U0001040c\U0001040d\U0001040e\U0001040f\U00010410\U00010411\U00010412\U00010413\U00010414\U00010415\U00010416\U00010417\U00010418\U00010419\U0001041a\U0001041b\U0001041c\U0001041d\U0001041e\U0001041f\U00010420\U00010421\U00010422\U00010423\U00010424\U00010425\U00010426\U00010427\u0300\u0301\u0302\u0303\u0304\u0306\u0307\u0308\u0309\u030a\u030b\u030c\u030f\u0311\u031b\u0323\u0324\u0325\u0326\u0327\u0328\u032d\u032e\u0330\u0331"
FOLD_TO = "abcdefghijklmnopqrstuvwxyz\u03bcaaaaaa\u00e6ceeeeiiii\u00f0nooooo\u00f8uuuuy\u00feaaaaaaceeeeiiiinooooouuuuyyaaaaaaccccccccdd\u0111eeeeeeeeeegggggggghh\u0127iiiiiiiii\u0133jjkkllllll\u0140\u0142nnnnnn\u014boooooo\u0153rrrrrrsssssssstttt\u0167uuuuuuuuuuuuwwyyyzzzzzzs\u0253\u0183\u0185\u0254\u0188\u0256\u0257\u018c\u01dd\u0259\u025b\u0192\u0260\u0263\u0269\u0268\u0199\u026f\u0272\u0275oo\u01a3\u01a5\u0280\u01a8\u0283\u01ad\u0288uu\u028a\u028b\u01b4\u01b6\u0292\u01b9\u01bd\u01c6\u01c6\u01c9\u01c9\u01cc\u01ccaaiioouuuuuuuuuuaa\u01e1\u01e3\u01e5ggkkoooo\u01efj\u01f3\u01f3gg\u0195\u01bfnnaa\u01fd\u01ffaaaaeeeeiiiioooorrrruuuusstt\u021dhh\u019e\u0223\u0225aaeeooooooooyy\u2c65\u023c\u019a\u2c66\u0242\u0180\u0289\u028c\u0247\u0249\u024b\u024d\u024f\u0371\u0373\u0377\u03ac\u03ad\u03ae\u03af\u03cc\u03cd\u03ce\u03b1\u03b2\u03b3\u03b4\u03b5\u03b6\u03b7\u03b8\u03b9\u03ba\u03bb\u03bc\u03bd\u03be\u03bf\u03c0\u03c1\u03c3\u03c4\u03c5\u03c6\u03c7\u03c8\u03c9\u03ca\u03cb\u03c3\u03d7\u03b2\u03b8\u03c6\u03c0\u03d9\u03db\u03dd\u03df\u03e1\u03e3\u03e5\u03e7\u03e9\u03eb\u03ed\u03ef\u03ba\u03c1\u03b8\u03b5\u03f8\u03f2\u03fb\u037b\u037c\u037d\u0450\u0451\u0452\u0453\u0454\u0455\u0456\u0457\u0458\u0459\u045a\u045b\u045c\u045d\u045e\u045f\u0430\u0431\u0432\u0433\u0434\u0435\u0436\u0437\u0438\u0439\u043a\u043b\u043c\u043d\u043e\u043f\u0440\u0441\u0442\u0443\u0444\u0445\u0446\u0447\u0448\u0449\u044a\u044b\u044c\u044d\u044e\u044f\u0461\u0463\u0465\u0467\u0469\u046b\u046d\u046f\u0471\u0473\u0475\u0477\u0479\u047b\u047d\u047f\u0481\u048b\u048d\u048f\u0491\u0493\u0495\u0497\u0499\u049b\u049d\u049f\u04a1\u04a3\u04a5\u04a7\u04a9\u04ab\u04ad\u04af\u04b1\u04b3\u04b5\u04b7\u04b9\u04bb\u04bd\u04bf\u04cf\u04c2\u04c4\u04c6\u04c8\u04ca\u04cc\u04ce\u04d1\u04d3\u04d5\u04d7\u04d9\u04db\u04dd\u04df\u04e1\u04e3\u04e5\u04e7\u04e9\u04eb\u04ed\u04ef\u04f1\u04f3\u04f5\u04f7\u04f9\u04fb\u04fd\u04ff\u0501\u0503\u0505\u0507\u0509\u050b\u050d\u050f\u0511\u0513\u0515\u0517\u0519\u051b\u051d\u051f\u0521\u0523\u0525\u0527\u0561\u0562\u0563\u0564\u0565\u0566\u0567\u0568\u0569\u056a\u056b\u056c\u056d\u056e\u056f\u0570\u0571\u0572\u0573\u0574\u0575\u0576\u0577\u0578\u0579\u057a\u057b\u057c\u057d\u057e\u057f\u0580\u0581\u0582\u0583\u0584\u0585\u0586\u2d00\u2d01\u2d02\u2d03\u2d04\u2d05\u2d06\u2d07\u2d08\u2d09\u2d0a\u2d0b\u2d0c\u2d0d\u2d0e\u2d0f\u2d10\u2d11\u2d12\u2d13\u2d14\u2d15\u2d16\u2d17\u2d18\u2d19\u2d1a\u2d1b\u2d1c\u2d1d\u2d1e\u2d1f\u2d20\u2d21\u2d22\u2d23\u2d24\u2d25\u2d27\u2d2daabbbbbbccddddddddddeeeeeeeeeeffgghhhhhhhhhhiiiikkkkkkllllllllmmmmmmnnnnnnnnoooooooopppprrrrrrrrssssssssssttttttttuuuuuuuuuuvvvvwwwwwwwwwwxxxxyyzzzzzzhtwys\u00dfaaaaaaaaaaaaaaaaaaaaaaaaeeeeeeeeeeeeeeeeiiiioooooooooooooooooooooooouuuuuuuuuuuuuuyyyyyyyy\u1efb\u1efd\u1eff\u1f00\u1f01\u1f02\u1f03\u1f04\u1f05\u1f06\u1f07\u1f10\u1f11\u1f12\u1f13\u1f14\u1f15\u1f20\u1f21\u1f22\u1f23\u1f24\u1f25\u1f26\u1f27\u1f30\u1f31\u1f32\u1f33\u1f34\u1f35\u1f36\u1f37\u1f40\u1f41\u1f42\u1f43\u1f44\u1f45\u1f51\u1f53\u1f55\u1f57\u1f60\u1f61\u1f62\u1f63\u1f64\u1f65\u1f66\u1f67\u1f80\u1f81\u1f82\u1f83\u1f84\u1f85\u1f86\u1f87\u1f90\u1f91\u1f92\u1f93\u1f94\u1f95\u1f96\u1f97\u1fa0\u1fa1\u1fa2\u1fa3\u1fa4\u1fa5\u1fa6\u1fa7\u1fb0\u1fb1\u1f70\u1f71\u1fb3\u03b9\u1f72\u1f73\u1f74\u1f75\u1fc3\u1fd0\u1fd1\u1f76\u1f77\u1fe0\u1fe1\u1f7a\u1f7b\u1fe5\u1f78\u1f79\u1f7c\u1f7d\u1ff3\u03c9ka\u214e\u2170\u2171\u2172\u2173\u2174\u2175\u2176\u2177\u2178\u2179\u217a\u217b\u217c\u217d\u217e\u217f\u2184\u2c30\u2c31\u2c32\u2c33\u2c34\u2c35\u2c36\u2c37\u2c38\u2c39\u2c3a\u2c3b\u2c3c\u2c3d\u2c3e\u2c3f\u2c40\u2c41\u2c42\u2c43\u2c44\u2c45\u2c46\u2c47\u2c48\u2c49\u2c4a\u2c4b\u2c4c\u2c4d\u2c4e\u2c4f\u2c50\u2c51\u2c52\u2c53\u2c54\u2c55\u2c56\u2c57\u2c58\u2c59\u2c5a\u2c5b\u2c5c\u2c5d\u2c5e\u2c61\u026b\u1d7d\u027d\u2c68\u2c6a\u2c6c\u0251\u0271\u0250\u0252\u2c73\u2c76\u023f\u0240\u2c81\u2c83\u2c85\u2c87\u2c89\u2c8b\u2c8d\u2c8f\u2c91\u2c93\u2c95\u2c97\u2c99\u2c9b\u2c9d\u2c9f\u2ca1\u2ca3\u2ca5\u2ca7\u2ca9\u2cab\u2cad\u2caf\u2cb1\u2cb3\u2cb5\u2cb7\u2cb9\u2cbb\u2cbd\u2cbf\u2cc1\u2cc3\u2cc5\u2cc7\u2cc9\u2ccb\u2ccd\u2ccf\u2cd1\u2cd3\u2cd5\u2cd7\u2cd9\u2cdb\u2cdd\u2cdf\u2ce1\u2ce3\u2cec\u2cee\u2cf3\ua641\ua643\ua645\ua647\ua649\ua64b\ua64d\ua64f\ua651\ua653\ua655\ua657\ua659\ua65b\ua65d\ua65f\ua661\ua663\ua665\ua667\ua669\ua66b\ua66d\ua681\ua683\ua685\ua687\ua689\ua68b\ua68d\ua68f\ua691\ua693\ua695\ua697\ua723\ua725\ua727\ua729\ua72b\ua72d\ua72f\ua733\ua735\ua737\ua739\ua73b\ua73d\ua73f\ua741\ua743\ua745\ua747\ua749\ua74b\ua74d\ua74f\ua751\ua753\ua755\ua757\ua759\ua75b\ua75d\ua75f\ua761\ua763\ua765\ua767\ua769\ua76b\ua76d\ua76f\ua77a\ua77c\u1d79\ua77f\ua781\ua783\ua785\ua787\ua78c\u0265\ua791\ua793\ua7a1\ua7a3\ua7a5\ua7a7\ua7a9\u0266\uff41\uff42\uff43\uff44\uff45\uff46\uff47\uff48\uff49\uff4a\uff4b\uff4c\uff4d\uff4e\uff4f\uff50\uff51\uff52\uff53\uff54\uff55\uff56\uff57\uff58\uff59\uff5a\U00010428\U00010429\U0001042a\U0001042b\U0001042c\U0001042d\U0001042e\U0001042f\U00010430\U00010431\U00010432\U00010433\U00010434\U00010435\U00010436\U00010437\U00010438\U00010439\U0001043a\U0001043b\U0001043c\U0001043d\U0001043e\U0001043f\U00010440\U00010441\U00010442\U00010443\U00010444\U00010445\U00010446\U00010447\U00010448\U00010449\U0001044a\U0001044b\U0001044c\U0001044d\U0001044e\U0001044f"


@functools.cache
def _splitter() -> re.Pattern:
    """SEPARATORS as a compiled pattern, on first use: compiling the class takes milliseconds,
    and the indexer imports this module for ascii_lexemes, which needs it only on PostgreSQL."""
    return re.compile(SEPARATORS + "+")


_FOLD = str.maketrans(FOLD_FROM[: len(FOLD_TO)], FOLD_TO, FOLD_FROM[len(FOLD_TO) :])


def words(text: str) -> list[str]:
    """The words FTS5 reads in text, as written."""
    return [word for word in _splitter().split(text) if word]


def fold(word: str) -> str:
    """A word as FTS5 indexes it: lower case, accents removed ("" if only accents)."""
    return word.translate(_FOLD)


# The longest word a tsvector's text takes, in bytes. The index's function keeps one a byte
# longer, made from an array, and leaves out longer ones (migration 0023).
TEXT_LEXEME_BYTES = 2046


@functools.cache
def _ascii_words() -> bytes:
    """An ASCII text's separators as spaces and its capitals as small letters, by the tables
    above, as a table for bytes.translate: split() then finds FTS5's words, folded."""
    separator = _splitter().fullmatch
    table = bytearray(range(256))
    for code in range(1, 128):
        if separator(character := chr(code)):
            table[code] = ord(" ")
        elif (folded := fold(character)) != character:
            table[code] = ord(folded)  # a capital: its small letter, ASCII too
    return bytes(table)


def ascii_lexemes(text: str) -> list[bytes] | None:
    """The words PostgreSQL's index holds for text (sessionviewer_search_vector, migration
    0023), each once, as ASCII bytes; None for a text that is not all ASCII, or that holds a
    word longer than TEXT_LEXEME_BYTES, which PostgreSQL reads itself (migration 0028). The
    work is bytes.translate and split, in C, in the indexer's reading process; the function
    runs a regular expression over every text, in the server (bench/README.md). In bytes,
    the history shape's texts took 0.78x the CPU they took in str.

    Each word once, sorted as a tsvector keeps its lexemes (their bytes compared, then the
    shorter first: Python's order for bytes). The server sorts a tsvector it receives in
    any other order (tsvectorrecv), and that sort was 8 % of its CPU in a cold index, on the
    writer's path; here, in the reading worker, it is off the path (bench/README.md).
    An ASCII word is letters and digits only: as a tsvector's text it needs no quotes."""
    if not text.isascii() or "\x00" in text:  # NUL: not a separator, and no text holds it
        return None
    found = sorted(set(text.encode().translate(_ascii_words()).split()))
    if len(text) > TEXT_LEXEME_BYTES and any(len(word) > TEXT_LEXEME_BYTES for word in found):
        return None  # a word too long for a tsvector's text: the function reads this one
    return found


# After each lexeme of a binary tsvector: its end (NUL) and its count of positions (none).
_NO_POSITIONS = b"\x00\x00\x00"


def binary_tsvector(lexemes: Collection[bytes]) -> bytes:
    """ASCII lexemes, each once, as a tsvector in PostgreSQL's binary form (tsvectorrecv: their
    count, then each lexeme and its positions, in any order), which the indexer's binary COPY
    sends: the server then neither parses a text nor the writer escapes one (bench/README.md)."""
    if not lexemes:
        return b"\x00\x00\x00\x00"
    return len(lexemes).to_bytes(4, "big") + _NO_POSITIONS.join(lexemes) + _NO_POSITIONS


# --- Reading the tables from SQLite ---------------------------------------------------------------------

LAST = 0x10FFFF


def probe(first: int = 1, last: int = LAST) -> tuple[list[int], dict[str, str]]:
    """The separators and the folds of FTS5's tokenizer among the code points first..last: each
    character is indexed between two letters ("qxq"), which are one word or two."""
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE probe USING fts5(x, tokenize='unicode61 remove_diacritics 2')")
    db.execute("CREATE VIRTUAL TABLE probe_terms USING fts5vocab(probe, 'instance')")
    codes = [c for c in range(first, last + 1) if not 0xD800 <= c <= 0xDFFF]  # no surrogates in UTF-8
    docs = [codes[n : n + 10_000] for n in range(0, len(codes), 10_000)]
    db.executemany(
        "INSERT INTO probe(rowid, x) VALUES (?, ?)",
        [(n, " ".join(f"q{chr(c)}q" for c in doc)) for n, doc in enumerate(docs)],
    )
    terms: dict[int, list[str]] = {}
    for doc, term in db.execute("SELECT doc, term FROM probe_terms ORDER BY doc, offset"):
        terms.setdefault(doc, []).append(term)
    separators: list[int] = []
    folds: dict[str, str] = {}
    for n, doc in enumerate(docs):
        found = iter(terms[n])
        for code in doc:
            term = next(found)
            if term == "q":  # split: "q", then "q" again
                next(found)
                separators.append(code)
            elif term[1:-1] != chr(code):
                folds[chr(code)] = term[1:-1]
    return separators, folds


def character_class(codes: list[int]) -> str:
    """codes (sorted) as one regular expression class of ranges."""
    ranges: list[list[int]] = []
    for code in codes:
        if ranges and ranges[-1][1] == code - 1:
            ranges[-1][1] = code
        else:
            ranges.append([code, code])

    def escaped(code: int) -> str:
        return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"

    return "[" + "".join(escaped(a) + ("" if a == b else "-" + escaped(b)) for a, b in ranges) + "]"


def fold_strings(folds: dict[str, str]) -> tuple[str, str]:
    """FOLD_FROM and FOLD_TO for folds: the characters that fold to none come last."""
    kept = sorted(c for c, f in folds.items() if f)
    dropped = sorted(c for c, f in folds.items() if not f)
    if any(len(folds[c]) != 1 for c in kept):
        raise ValueError("a character folds into more than one")
    return "".join(kept + dropped), "".join(folds[c] for c in kept)


def _escaped(text: str) -> str:
    return "".join(
        c if c.isascii() and c.isalnum() else f"\\u{ord(c):04x}" if ord(c) <= 0xFFFF else f"\\U{ord(c):08x}"
        for c in text
    )


def main() -> None:
    """Print this module with its tables read from the SQLite in use."""
    separators, folds = probe()
    source, target = fold_strings(folds)
    with open(__file__, encoding="utf-8") as module:
        text = module.read()
    tables = {
        "SEPARATORS": character_class(separators),
        "FOLD_FROM": _escaped(source),
        "FOLD_TO": _escaped(target),
    }
    for name, value in tables.items():
        text = re.sub(
            rf'^{name} = r?"[^"\n]*"$',
            lambda _, n=name, v=value: f'{n} = {"r" if n == "SEPARATORS" else ""}"{v}"',
            text,
            count=1,
            flags=re.M,
        )
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
