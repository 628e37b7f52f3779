package authstub_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/tablegate/tablegate/internal/authstub"
	"github.com/tablegate/tablegate/internal/keys"
)

// A stand-in auth server with one account: the password grant answers a
// GoTrue session; a hook makes the next refresh fail as GoTrue does when
// it is down.
func Example() {
	s, err := authstub.New(authstub.Config{APIKey: "sb_publishable_example"})
	if err != nil {
		panic(err)
	}
	s.AddAccount(authstub.Account{Token: keys.TokenSpec{Sub: "11111111-1111-4111-8111-111111111111"},
		Email: "ada@example.com", Password: "correct horse"})
	srv := httptest.NewServer(s)
	defer srv.Close()

	token := func(grant, body string) *http.Response {
		req, _ := http.NewRequest("POST", srv.URL+"/auth/v1/token?grant_type="+grant, strings.NewReader(body))
		req.Header.Set("apikey", "sb_publishable_example")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		return resp
	}
	resp := token("password", `{"email":"ada@example.com","password":"correct horse"}`)
	var session struct {
		TokenType    string `json:"token_type"`
		ExpiresIn    int    `json:"expires_in"`
		RefreshToken string `json:"refresh_token"`
		User         struct {
			Email string `json:"email"`
		} `json:"user"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&session)
	resp.Body.Close()
	fmt.Println(resp.StatusCode, session.TokenType, session.ExpiresIn, session.User.Email)

	s.Hook("/token", func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	resp = token("refresh_token", `{"refresh_token":"`+session.RefreshToken+`"}`)
	resp.Body.Close()
	fmt.Println(resp.StatusCode)
	// Output:
	// 200 bearer 3600 ada@example.com
	// 503
}
