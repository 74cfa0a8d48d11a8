package upstream

import "testing"

func TestMarshalStyles(t *testing.T) {
	v := struct {
		DialogID string `json:"dialog_id"`
		Type     string `json:"type"`
		Content  string `json:"content"`
		N        []int  `json:"n"`
	}{"d", "chat", "a, b: <c> & \"q\" é €🚀 \u2028 \n\t\x01", []int{1, 2}}
	for _, tc := range []struct {
		name  string
		style jsonStyle
		want  string
	}{
		{"python", stylePython, `{"dialog_id": "d", "type": "chat", "content": "a, b: <c> & \"q\" é €🚀 ` + "\u2028" + ` \n\t\u0001", "n": [1, 2]}`},
		{"python-ascii", stylePythonASCII, `{"dialog_id": "d", "type": "chat", "content": "a, b: <c> & \"q\" \u00e9 \u20ac\ud83d\ude80 \u2028 \n\t\u0001", "n": [1, 2]}`},
		{"node", styleNode, `{"dialog_id":"d","type":"chat","content":"a, b: <c> & \"q\" é €🚀 ` + "\u2028" + ` \n\t\u0001","n":[1,2]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := marshal(tc.style, v)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}
