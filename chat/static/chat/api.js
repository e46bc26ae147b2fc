/* The page's JSON (docs/chat.md, The page's JSON): same-origin requests with the session cookie
 * and the CSRF token; a 401 (signed out meanwhile) sends the browser to the login page. */

function cookie(name) {
  const m = document.cookie.match(new RegExp("(?:^|; )" + name + "=([^;]*)"));
  return m ? decodeURIComponent(m[1]) : "";
}

export function signIn() {
  window.location.href = "/login/?next=/";
}

/* api(method, url, body?) -> the JSON answer; a 4xx/5xx answer rejects with an Error whose
 * ``code`` and ``status`` are the server's. ``body`` goes as JSON. */
export function api(method, url, body) {
  const headers = method === "GET" ? {} : { "X-CSRFToken": cookie("csrftoken") };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  return fetch(url, {
    method: method, credentials: "same-origin", headers: headers,
    body: body === undefined ? undefined : JSON.stringify(body)
  }).then(function (r) {
    if (r.status === 401) { signIn(); throw new Error("signed out"); }
    return r.json().then(function (data) {
      if (r.ok) return data;
      const error = new Error((data && data.message) || "HTTP " + r.status);
      error.code = data && data.code;
      error.status = r.status;
      throw error;
    });
  });
}

/* A POST with a body (an object goes as JSON, FormData as it is) and the CSRF token, to the site's
 * API (session auth), abortable with ``signal``: the Response itself, to read as audio or as an
 * error; a 401 still goes to the login page. */
export function post(url, body, signal) {
  const headers = { "X-CSRFToken": cookie("csrftoken") };
  if (!(body instanceof FormData)) headers["Content-Type"] = "application/json";
  return fetch(url, {
    method: "POST", credentials: "same-origin", headers: headers,
    body: body instanceof FormData ? body : JSON.stringify(body), signal: signal
  }).then(function (r) {
    if (r.status === 401) { signIn(); throw new Error("signed out"); }
    return r;
  });
}
